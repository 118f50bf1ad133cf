import { LargeInputWork, refusalsOfStep } from '@gw/workers';
import type { LargeInputWorkOptions } from '@gw/workers';
import type { CompletionRequest } from './completion';
import { planStubAnswer } from './test-stub';
import type { StubPlan } from './test-stub';

/** The thread's task: a copy of the request body that moved to the thread. */
export interface StubPlanTask {
  body: Uint8Array;
  model: string;
}

export const planStubTask = (task: StubPlanTask): StubPlan => planStubAnswer(task.body, task.model);

/**
 * Test keys' requests read into the stub's plan: small bodies inline, large ones on worker threads shared
 * fairly between accounts, so that hashing and parsing one caller's megabytes never stalls the router's event
 * loop, which every other account's streams share.
 */
export class StubPlans {
  private constructor(private readonly work: LargeInputWork<StubPlanTask, StubPlan>) {}

  /** `script`: dist/stub-plan-thread.js as built by tsc. */
  static async start(options: Omit<LargeInputWorkOptions, 'refusals'>): Promise<StubPlans> {
    const refusals = refusalsOfStep('the test stub', 'The router');
    return new StubPlans(await LargeInputWork.start({ ...options, refusals }, planStubTask));
  }

  async plan(request: CompletionRequest, signal: AbortSignal): Promise<StubPlan> {
    const { accountId, body, model } = request;
    const planned = await this.work.run(accountId, body, (own) => ({ body: own, model }), signal);
    return planned.ok ? planned.value : { kind: 'refused', error: planned.error };
  }

  close(): Promise<void> {
    return this.work.close();
  }
}
