import type { IncomingHttpHeaders } from 'node:http';

/** What became of a recorded request's response. */
export type RequestOutcome = 'in_progress' | 'completed' | 'client_closed' | 'dropped';

export interface RecordedRequest {
  /** The `request-id` the simulator answered with. */
  requestId: string;
  receivedAt: string;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body; null when the body was empty or not JSON. */
  body: unknown;
  /**
   * The body's bytes as received (UTF-8), for bodies up to `rawBodyLimitBytes`: what `JSON.parse` would round
   * (integers beyond 2^53, `1.0`, escapes, key order) a lossless parser can check here.
   */
  rawBody?: string;
  outcome: RequestOutcome;
}

/** Bodies up to this size are also logged as received; the log holds 100 requests of up to 32 MB. */
export const rawBodyLimitBytes = 1024 * 1024;

/** Headers that carry credentials never reach the log. */
const credentialHeaders = new Set([
  'authorization',
  'x-api-key',
  'api-key',
  'proxy-authorization',
  'cookie',
  'x-amz-security-token',
]);

export function withoutCredentials(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !credentialHeaders.has(name)));
}

/** The last `capacity` requests, oldest first. */
export class RequestLog {
  private readonly entries: RecordedRequest[] = [];

  constructor(private readonly capacity: number) {}

  add(entry: RecordedRequest): void {
    this.entries.push(entry);
    if (this.entries.length > this.capacity) this.entries.shift();
  }

  list(): readonly RecordedRequest[] {
    return this.entries;
  }

  clear(): void {
    this.entries.length = 0;
  }
}
