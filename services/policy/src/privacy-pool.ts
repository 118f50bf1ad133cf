import type { Result } from '@gw/errors';
import { FairThreadPool, refusalsOfStep } from '@gw/workers';
import type { ThreadPoolOptions } from '@gw/workers';
import type { PrivacyMode, PrivacyOutcome } from './privacy';
import type { ThreadTask } from './privacy-thread';
import { privacyStepFailed } from './privacy-step';

export type { ThreadFailure } from '@gw/workers';

/** Worker threads for bodies over the inline bound (privacy-step.ts), shared fairly between accounts. */
export type PrivacyPoolOptions = Omit<ThreadPoolOptions, 'refusals'>;

const refusals = {
  ...refusalsOfStep('the privacy step', 'The policy service'),
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
    // The request's bytes are a view into gRPC's whole message: one copy into a buffer of its own, made when a
    // thread takes the body (a waiting body is not held twice), which then moves to the thread instead of
    // being cloned.
    const prepare = () => {
      const own = new Uint8Array(body);
      return { task: { mode, body: own }, transfer: [own.buffer] };
    };
    return this.pool.run(account, prepare, signal);
  }

  /** Refuses every request not yet answered and ends every thread. */
  close(): Promise<void> {
    return this.pool.close();
  }
}
