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
  outcome: RequestOutcome;
}

/** Headers that carry credentials never reach the log. */
const credentialHeaders = new Set(['authorization', 'x-api-key', 'api-key', 'proxy-authorization', 'cookie']);

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
