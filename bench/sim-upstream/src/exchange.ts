import type { IncomingMessage, ServerResponse } from 'node:http';

/** The request body as the simulator read it. */
export type ParsedBody = { kind: 'json'; value: unknown } | { kind: 'invalid' };

/** One request being answered, as a protocol handler sees it. */
export interface SimExchange {
  request: IncomingMessage;
  response: ServerResponse;
  /** Sent as the `request-id` header and in error bodies. */
  requestId: string;
  body: ParsedBody;
  /** The body's bytes as received (a signature covers them). */
  raw: Buffer;
  /** Aborted when the client goes away before the response is complete. */
  signal: AbortSignal;
  /** Destroys the connection on purpose; the request log records it as `dropped`. */
  drop(): void;
}
