import type { Result } from '@gw/errors';
import type { TopLevelLayout } from '@gw/json-layout';
import type { CompletionStream, JsonObject } from '../completion';
import type { UpstreamBody, UpstreamHttpRequest } from '../upstream-http';

/** One attempt on one endpoint, in the adapter's terms. */
export interface AdapterCall {
  /** The endpoint's base URL, without a trailing slash. */
  endpointUrl: string;
  upstreamModel: string;
  /**
   * The caller's Messages request body, parsed: for adapters that translate it. The router parses it on first
   * read when ingress sent the body's layout, so an adapter that edits only the top level never pays for it.
   */
  body: JsonObject;
  /**
   * The same body's bytes as received: adapters that edit only its top level copy the rest unchanged.
   * The router always sets it; absent (adapter tests), the parsed body is written out.
   */
  rawBody?: Uint8Array;
  /** Where `rawBody`'s top-level members are (ingress found them); absent, the edits find them. */
  layout?: TopLevelLayout;
  stream: boolean;
  /** The caller's headers the protocol cares about, names in lower case. */
  headers: Record<string, string>;
  /** The caller's query string without its `?` (`beta=true`), empty when none. */
  query: string;
  /** The pool's credential; undefined when the pool names none. */
  credential: string | undefined;
  requestId: string;
}

/**
 * Adds a pool's credentials to a built request: a signature over it (SigV4) or a bearer token. Rejects
 * when the credentials cannot be had (the chain found none, the token endpoint failed); the error's
 * message never holds a secret.
 */
export interface RequestSigner {
  sign(request: UpstreamHttpRequest): Promise<UpstreamHttpRequest>;
}

/** What the relay of an answer needs to know of the call it answers. */
export interface RelayCall {
  stream: boolean;
  /** The model alias the caller asked for: answers name it, not the upstream's model id. */
  model: string;
  /** The caller's Messages request body (after the privacy mode). */
  body: JsonObject;
}

/** One count_tokens attempt on one endpoint: the same as a Messages call, without streaming. */
export type CountTokensCall = Omit<AdapterCall, 'stream'>;

/** Counting a request's input tokens upstream, for the protocols that have a way to. */
export interface CountTokensCapability {
  buildRequest(call: CountTokensCall): UpstreamHttpRequest;
  /** Whether a 200 with this content type is a count. */
  acceptsContentType(contentType: string | undefined): boolean;
  /** The input tokens in a 200 body; a failure when the body is not a count. */
  parseCount(text: string): Result<number>;
}

/** What an upstream's error body says, when it says anything readable. */
export interface UpstreamErrorBody {
  type?: string;
  message?: string;
}

/**
 * One upstream protocol. Pure transforms from the caller's request to the upstream's and from the
 * upstream's answer to completion events; the router does the HTTP and the failover.
 */
export interface UpstreamAdapter {
  /**
   * Optional. Refuses, before anything is sent, a request this protocol cannot carry as the
   * adapter is configured: an `invalid_request_error` naming the field (e.g. an image for a
   * text-only upstream, a server tool). Depends only on the body and the stream flag, so one check
   * per pool is enough. Absent: every request can be carried. `buildRequest` of a refused call sends
   * what can be carried.
   */
  checkRequest?(call: Pick<AdapterCall, 'body' | 'stream'>): Result<void>;
  buildRequest(call: AdapterCall): UpstreamHttpRequest;
  /** Whether a 200 with this content type is the kind of answer the call asked for. */
  acceptsContentType(contentType: string | undefined, stream: boolean): boolean;
  parseErrorBody(text: string): UpstreamErrorBody;
  /**
   * Turns a 200 body into `sse` events or one `message`, then `finished` with the usage; or a
   * failure. Ends quietly when the body ends because the caller cancelled. The Message (or
   * `message_start`) names the caller's model alias.
   */
  relay(body: UpstreamBody, call: RelayCall): CompletionStream;
  /** Absent when the protocol cannot count tokens: the router then answers its own estimate. */
  countTokens?: CountTokensCapability;
  /**
   * Optional: the caller's `anthropic-beta` names this adapter does not pass on (its provider does not
   * support them), for the response header and the metric. Absent: every beta is passed on.
   */
  droppedBetas?(headers: Record<string, string>): string[];
  /** The provider label of `gateway_upstream_betas_dropped_total`. */
  provider?: string;
}
