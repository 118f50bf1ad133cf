import type { Result } from '@gw/errors';
import type { CompletionStream, JsonObject } from '../completion';
import type { UpstreamBody, UpstreamHttpRequest } from '../upstream-http';

/** One attempt on one endpoint, in the adapter's terms. */
export interface AdapterCall {
  /** The endpoint's base URL, without a trailing slash. */
  endpointUrl: string;
  upstreamModel: string;
  /** The caller's Messages request body, parsed: for adapters that translate it. */
  body: JsonObject;
  /** The same body's bytes as they came (after the privacy mode): for adapters that pass it on. */
  bodyBytes: Uint8Array;
  stream: boolean;
  /** The caller's headers the protocol cares about, names in lower case. */
  headers: Record<string, string>;
  /** The caller's query string without its `?` (`beta=true`), empty when none. */
  query: string;
  /** The pool's credential; undefined when the pool names none. */
  credential: string | undefined;
  requestId: string;
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
  /**
   * Optional, for adapters that translate: the caller's `anthropic-beta` names this upstream does not take and
   * that the request goes without (never one that would change the answer: such a request is refused by
   * `checkRequest`). Absent: the header is passed on for the upstream to judge.
   */
  droppedBetas?(headers: Record<string, string>): string[];
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
}
