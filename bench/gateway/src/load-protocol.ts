/** What the benchmark asks of the load generator process, and what it answers. */

/** Closed loop: `concurrency` loops, each sending its next request when the previous one is answered. */
export interface LoadJob {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Expect an SSE stream and time its first content_block_delta. */
  streamed: boolean;
  concurrency: number;
  /** Stop after this many requests, or after durationMs, whichever comes first (at least one is set). */
  requests?: number;
  durationMs?: number;
  /** A request without an answer for this long fails. */
  timeoutMs: number;
  /**
   * Open loop instead: one request every 1/ratePerSecond s for durationMs, whether or not earlier ones
   * were answered; each latency runs from the request's scheduled time, so a late send counts against it.
   */
  ratePerSecond?: number;
}

export interface LoadResult {
  /** Requests answered, successfully or not. */
  requests: number;
  errors: number;
  firstError?: string;
  /** From the first request sent to the last answer. */
  elapsedMs: number;
  /** Of each successful request: until the whole response was read. */
  latenciesMs: number[];
  /** Of each successful streamed request: until the first content_block_delta arrived. */
  firstTokenMs: number[];
}
