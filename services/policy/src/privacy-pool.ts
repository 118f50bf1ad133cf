import { gatewayError } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import { FairThreadPool } from '@gw/workers';
import type { ThreadFailure } from '@gw/workers';
import type { PrivacyMode, PrivacyOutcome } from './privacy';
import type { ThreadTask } from './privacy-thread';
import { privacyStepFailed } from './privacy-step';

export type { ThreadFailure } from '@gw/workers';

export interface PrivacyPoolOptions {
  /** Worker threads; one account runs on at most half of them, rounded up. */
  threads: number;
  /** Bodies of one account that may wait for a thread. */
  queuedPerAccount: number;
  /** Bodies that may wait for a thread, all accounts together. */
  queuedTotal: number;
  /** The thread's script: dist/privacy-thread.js as built by tsc (a file: or data: URL too). */
  script: string | URL;
  /** A thread died on its own (a bug, out of memory): its request failed and another thread took its place. */
  onThreadFailure: (failure: ThreadFailure) => void;
}

const refusals = {
  refused: (): GatewayError =>
    gatewayError(
      'overloaded_error',
      'Too many large requests of this account are waiting for the privacy step. Retry with exponential backoff.',
      { retryAfterMs: 1_000 },
    ),
  cancelled: (): GatewayError => gatewayError('overloaded_error', 'The call ended before the privacy step finished.'),
  shuttingDown: (): GatewayError =>
    gatewayError('overloaded_error', 'The policy service is shutting down. Retry.', { retryAfterMs: 1_000 }),
  // Fail closed: the body is never forwarded untransformed.
  failed: privacyStepFailed,
};

/**
 * The privacy modes on worker threads (a FairThreadPool), so that a large body never holds up policy's other
 * calls, with threads shared fairly between accounts.
 */
export class PrivacyPool {
  private constructor(private readonly pool: FairThreadPool<ThreadTask, PrivacyOutcome>) {}

  /** Starts every thread; resolves once each has loaded, rejects when one cannot (a missing script). */
  static async start(options: PrivacyPoolOptions): Promise<PrivacyPool> {
    return new PrivacyPool(await FairThreadPool.start<ThreadTask, PrivacyOutcome>({ ...options, refusals }));
  }

  /** Applies the mode to the body on a thread: at once, after a wait in the account's queue, or refused. */
  run(account: string, mode: PrivacyMode, body: Uint8Array, signal: AbortSignal): Promise<Result<PrivacyOutcome>> {
    // The request's bytes are a view into gRPC's whole message: one copy into a buffer of its own, which then
    // moves to the thread instead of being cloned.
    const own = new Uint8Array(body);
    return this.pool.run(account, { mode, body: own }, [own.buffer], signal);
  }

  /** Refuses every request not yet answered and ends every thread. */
  close(): Promise<void> {
    return this.pool.close();
  }
}
