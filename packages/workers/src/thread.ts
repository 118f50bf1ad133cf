import { parentPort } from 'node:worker_threads';
import type { TransferListItem } from 'node:worker_threads';

/** From a thread to its pool: `ready` once loaded, then one `done` or `failed` per task, in order. */
export type ThreadMessage<Outcome> = { kind: 'ready' } | { kind: 'done'; outcome: Outcome } | { kind: 'failed' };

/** What a task's work gives back: the outcome, and the buffers of it that move to the pool instead of a copy. */
export interface TaskResult<Outcome> {
  outcome: Outcome;
  transfer?: readonly TransferListItem[];
}

/** A buffer that owns its whole ArrayBuffer can move; a view into Node's shared slab (under 4 KiB) is copied. */
export function transferableOf(bytes: Uint8Array | undefined): TransferListItem[] {
  if (!bytes || bytes.byteOffset !== 0 || bytes.byteLength !== bytes.buffer.byteLength) return [];
  return bytes.buffer instanceof ArrayBuffer ? [bytes.buffer] : [];
}

/**
 * The body of a pool's thread script: one task at a time, each answered with its outcome or `failed`. The
 * reason of a failure stays in the thread, since it may quote the task's data (JSON.parse's messages do).
 */
export function serveTasks<Task, Outcome>(work: (task: Task) => TaskResult<Outcome>): void {
  const port = parentPort;
  if (!port) throw new Error('this script runs as a worker thread of a FairThreadPool only');
  port.on('message', (task: Task) => {
    let reply: ThreadMessage<Outcome>;
    let transfer: readonly TransferListItem[] = [];
    try {
      const result = work(task);
      reply = { kind: 'done', outcome: result.outcome };
      transfer = result.transfer ?? [];
    } catch {
      reply = { kind: 'failed' };
    }
    port.postMessage(reply, transfer);
  });
  port.postMessage({ kind: 'ready' } satisfies ThreadMessage<Outcome>);
}
