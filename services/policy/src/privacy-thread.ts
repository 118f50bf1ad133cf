import { parentPort } from 'node:worker_threads';
import type { MessagePort, TransferListItem } from 'node:worker_threads';
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

/** From the thread: `ready` once loaded, then one `done` or `failed` per task, in order. */
export type ThreadMessage = { kind: 'ready' } | { kind: 'done'; outcome: PrivacyOutcome } | { kind: 'failed' };

/** A buffer that owns its whole ArrayBuffer can move; a view into Node's shared slab (under 4 KiB) is copied. */
function transferableOf(bytes: Uint8Array | undefined): TransferListItem[] {
  if (!bytes || bytes.byteOffset !== 0 || bytes.byteLength !== bytes.buffer.byteLength) return [];
  return bytes.buffer instanceof ArrayBuffer ? [bytes.buffer] : [];
}

function serve(port: MessagePort): void {
  port.on('message', (task: ThreadTask) => {
    let reply: ThreadMessage;
    try {
      reply = { kind: 'done', outcome: transformBody(task.mode, task.body) };
    } catch {
      // The reason may quote the body (JSON.parse does): it stays here.
      reply = { kind: 'failed' };
    }
    port.postMessage(reply, reply.kind === 'done' ? transferableOf(reply.outcome.body) : []);
  });
  port.postMessage({ kind: 'ready' } satisfies ThreadMessage);
}

if (!parentPort) throw new Error('privacy-thread.js runs as a worker thread of the privacy pool only');
serve(parentPort);
