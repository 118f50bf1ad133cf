import { serveTasks } from '@gw/workers/thread';
import type { Result } from '@gw/errors';
import { summariseBody } from './body-checks';
import type { BodyCheckTask, BodySummary } from './body-checks';

/** A worker thread of BodyChecks: one large body at a time, parsed and validated off the event loop. */
serveTasks<BodyCheckTask, Result<BodySummary>>((task) => ({ outcome: summariseBody(task) }));
