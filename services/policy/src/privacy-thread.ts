import { serveTasks, transferableOf } from '@gw/workers/thread';
import { transformBody } from './privacy';
import type { PrivacyMode, PrivacyOutcome } from './privacy';

/**
 * A worker thread of the privacy pool (privacy-pool.ts): one body at a time, the privacy mode applied with
 * `transformBody`, the outcome posted back. Nothing of the caller's text leaves it except in the outcome.
 */

/** To the thread: the body's own ArrayBuffer is transferred with it, not copied. */
export interface ThreadTask {
  mode: PrivacyMode;
  body: Uint8Array;
}

serveTasks<ThreadTask, PrivacyOutcome>((task) => {
  const outcome = transformBody(task.mode, task.body);
  return { outcome, transfer: transferableOf(outcome.body) };
});
