import { gatewayError, internalErrorMessage, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { FairThreadPool } from './thread-pool';
import type { ThreadPoolOptions, ThreadPoolRefusals } from './thread-pool';

/**
 * The refusals of a pool worded alike in every service: `step` is what a large request waits for ("the
 * privacy step"), `service` who is shutting down ("The router"). A failed task is 500 `api_error`.
 */
export function refusalsOfStep(step: string, service: string): ThreadPoolRefusals {
  return {
    refused: () =>
      gatewayError(
        'overloaded_error',
        `Too many large requests of this account are waiting for ${step}. Retry with exponential backoff.`,
        { retryAfterMs: 1_000 },
      ),
    cancelled: () => gatewayError('overloaded_error', `The call ended before ${step} finished.`),
    shuttingDown: () =>
      gatewayError('overloaded_error', `${service} is shutting down. Retry.`, { retryAfterMs: 1_000 }),
    failed: () => gatewayError('api_error', internalErrorMessage),
  };
}

export interface LargeInputWorkOptions extends ThreadPoolOptions {
  /** Inputs up to this size are worked on inline: a round trip to a thread would cost about as much. */
  inlineMaxBytes: number;
}

/**
 * Work on a request's bytes that costs CPU in proportion to their size: inline for small inputs, on a
 * FairThreadPool for large ones, so that one caller's megabytes never stall the event loop every other
 * account's requests share. The thread gets a copy of the bytes of its own, made when it takes the task (not
 * while the task waits) and moved rather than cloned: the caller's bytes travel on unchanged.
 */
export class LargeInputWork<Task, Outcome> {
  private constructor(
    private readonly inlineMaxBytes: number,
    private readonly work: (task: Task) => Outcome,
    private readonly pool: FairThreadPool<Task, Outcome>,
  ) {}

  /** `work` is what the thread script (`options.script`, calling `serveTasks`) does, run here for small inputs. */
  static async start<Task, Outcome>(
    options: LargeInputWorkOptions,
    work: (task: Task) => Outcome,
  ): Promise<LargeInputWork<Task, Outcome>> {
    return new LargeInputWork(options.inlineMaxBytes, work, await FairThreadPool.start<Task, Outcome>(options));
  }

  run(
    account: string,
    input: Uint8Array,
    taskOf: (input: Uint8Array) => Task,
    signal?: AbortSignal,
  ): Promise<Result<Outcome>> {
    if (input.byteLength <= this.inlineMaxBytes) return Promise.resolve(ok(this.work(taskOf(input))));
    return this.pool.run(
      account,
      () => {
        const copy = new Uint8Array(input);
        return { task: taskOf(copy), transfer: [copy.buffer] };
      },
      signal,
    );
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
