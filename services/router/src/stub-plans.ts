import { gatewayError, internalErrorMessage } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import { FairThreadPool } from '@gw/workers';
import type { ThreadFailure } from '@gw/workers';
import type { CompletionRequest } from './completion';
import { planStubAnswer } from './test-stub';
import type { StubPlan } from './test-stub';

/** The thread's task: a copy of the request body that moves to the thread. */
export interface StubPlanTask {
  body: Uint8Array;
  model: string;
}

export interface StubPlansOptions {
  /** Bodies up to this size are read on the event loop: a thread's round trip would cost more. */
  inlineMaxBytes: number;
  threads: number;
  /** Large bodies of one account that may wait for a thread; more are refused (503). */
  queuedPerAccount: number;
  queuedTotal: number;
  /** dist/stub-plan-thread.js as built by tsc. */
  script: string | URL;
  onThreadFailure: (failure: ThreadFailure) => void;
}

const refusals = {
  refused: (): GatewayError =>
    gatewayError(
      'overloaded_error',
      'Too many large requests of this account are waiting for the router. Retry with exponential backoff.',
      { retryAfterMs: 1_000 },
    ),
  cancelled: (): GatewayError => gatewayError('overloaded_error', 'The call ended before its body was read.'),
  shuttingDown: (): GatewayError =>
    gatewayError('overloaded_error', 'The router is shutting down. Retry.', { retryAfterMs: 1_000 }),
  failed: (): GatewayError => gatewayError('api_error', internalErrorMessage),
};

/**
 * Test keys' requests read into the stub's plan: small bodies inline, large ones on worker threads shared
 * fairly between accounts, so that hashing and parsing one caller's megabytes never stalls the router's event
 * loop, which every other account's streams share.
 */
export class StubPlans {
  private constructor(
    private readonly options: StubPlansOptions,
    private readonly pool: FairThreadPool<StubPlanTask, StubPlan>,
  ) {}

  static async start(options: StubPlansOptions): Promise<StubPlans> {
    return new StubPlans(options, await FairThreadPool.start<StubPlanTask, StubPlan>({ ...options, refusals }));
  }

  async plan(request: CompletionRequest, signal: AbortSignal): Promise<StubPlan> {
    if (request.body.byteLength <= this.options.inlineMaxBytes) return planStubAnswer(request.body, request.model);
    const copy = new Uint8Array(request.body);
    const planned = await this.pool.run(request.accountId, { body: copy, model: request.model }, [copy.buffer], signal);
    return planned.ok ? planned.value : { kind: 'refused', error: planned.error };
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
