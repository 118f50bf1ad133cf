import { serveTasks } from '@gw/workers/thread';
import { planStubTask } from './stub-plans';
import type { StubPlan } from './test-stub';
import type { StubPlanTask } from './stub-plans';

/** A worker thread of StubPlans: one large test-key body at a time, read into the stub's plan. */
serveTasks<StubPlanTask, StubPlan>((task) => ({ outcome: planStubTask(task) }));
