import { gatewayError, internalErrorMessage, ok } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import { FairThreadPool } from '@gw/workers';
import type { ThreadFailure } from '@gw/workers';
import { parseCountTokensBody, parseMessagesBody } from './validation';

/** Which endpoint's rules a body is checked against. */
export type BodyKind = 'messages' | 'count_tokens';

/** All a checked body tells the pipeline; the body itself travels on as the caller's bytes. */
export interface BodySummary {
  model: string;
  /** Messages only: the caller asked for a stream. */
  stream: boolean;
}

/** The thread's task: the bytes are a copy of the caller's that moves to the thread. */
export interface BodyCheckTask {
  kind: BodyKind;
  body: Uint8Array;
}

/** Parses and validates a body: the same answer inline or on a thread. */
export function summariseBody(kind: BodyKind, raw: Uint8Array): Result<BodySummary> {
  const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  if (kind === 'count_tokens') {
    const body = parseCountTokensBody(bytes);
    return body.ok ? ok({ model: body.value.model, stream: false }) : body;
  }
  const body = parseMessagesBody(bytes);
  return body.ok ? ok({ model: body.value.model, stream: body.value.stream === true }) : body;
}

export interface BodyChecksOptions {
  /** Bodies up to this size are checked on the event loop: a thread's round trip would cost more. */
  inlineMaxBytes: number;
  threads: number;
  /** Large bodies of one account that may wait for a thread; more are refused (503). */
  queuedPerAccount: number;
  /** Large bodies that may wait for a thread, all accounts together. */
  queuedTotal: number;
  /** dist/body-check-thread.js as built by tsc. */
  script: string | URL;
  onThreadFailure: (failure: ThreadFailure) => void;
}

const refusals = {
  refused: (): GatewayError =>
    gatewayError(
      'overloaded_error',
      'Too many large requests of this account are waiting to be checked. Retry with exponential backoff.',
      { retryAfterMs: 1_000 },
    ),
  cancelled: (): GatewayError => gatewayError('overloaded_error', 'The request ended before its body was checked.'),
  shuttingDown: (): GatewayError =>
    gatewayError('overloaded_error', 'The gateway is shutting down. Retry.', { retryAfterMs: 1_000 }),
  failed: (): GatewayError => gatewayError('api_error', internalErrorMessage),
};

/**
 * Checks request bodies: small ones inline, large ones on worker threads shared fairly between accounts, so
 * that parsing one caller's megabytes of JSON never holds up every other caller's requests on the event loop.
 */
export class BodyChecks {
  private constructor(
    private readonly options: BodyChecksOptions,
    private readonly pool: FairThreadPool<BodyCheckTask, Result<BodySummary>>,
  ) {}

  static async start(options: BodyChecksOptions): Promise<BodyChecks> {
    return new BodyChecks(
      options,
      await FairThreadPool.start<BodyCheckTask, Result<BodySummary>>({ ...options, refusals }),
    );
  }

  async check(kind: BodyKind, raw: Uint8Array, account: string): Promise<Result<BodySummary>> {
    if (raw.byteLength <= this.options.inlineMaxBytes) return summariseBody(kind, raw);
    // The caller's bytes go on upstream: the thread gets a copy of its own, moved rather than cloned.
    const copy = new Uint8Array(raw);
    const checked = await this.pool.run(account, { kind, body: copy }, [copy.buffer]);
    return checked.ok ? checked.value : checked;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
