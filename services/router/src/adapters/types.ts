import type { CompletionStream, JsonObject } from '../completion';
import type { UpstreamBody, UpstreamHttpRequest } from '../upstream-http';

/** One attempt on one endpoint, in the adapter's terms. */
export interface AdapterCall {
  /** The endpoint's base URL, without a trailing slash. */
  endpointUrl: string;
  upstreamModel: string;
  /** The caller's Messages request body. */
  body: JsonObject;
  stream: boolean;
  /** The caller's headers the protocol cares about, names in lower case. */
  headers: Record<string, string>;
  /** The pool's credential; undefined when the pool names none. */
  credential: string | undefined;
  requestId: string;
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
  buildRequest(call: AdapterCall): UpstreamHttpRequest;
  /** Whether a 200 with this content type is the kind of answer the call asked for. */
  acceptsContentType(contentType: string | undefined, stream: boolean): boolean;
  parseErrorBody(text: string): UpstreamErrorBody;
  /**
   * Turns a 200 body into `sse` events or one `message`, then `finished` with the usage; or a
   * failure. Ends quietly when the body ends because the caller cancelled.
   */
  relay(body: UpstreamBody, stream: boolean): CompletionStream;
}
