import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { gatewayError } from '@gw/errors';
import { LargeInputWork, refusalsOfStep } from '../src/large-input-work';
import { FairThreadPool } from '../src/thread-pool';
import type { ThreadPoolRefusals } from '../src/thread-pool';

/** `serveTasks` as tsc builds it (`pnpm exec tsc -b`): worker threads load JavaScript. */
const builtThread = pathToFileURL(join(__dirname, '../dist/thread.js')).href;

/**
 * A thread whose work doubles `n`, throws on `throw` (its message quoting the task), keeps its thread busy
 * for `spinMs`, and moves `bytes` back.
 */
const script = new URL(
  `data:text/javascript,${encodeURIComponent(`
import { serveTasks } from ${JSON.stringify(builtThread)};
serveTasks((task) => {
  if (task.throw) throw new Error('secret ' + task.throw);
  const until = Date.now() + (task.spinMs ?? 0);
  while (Date.now() < until);
  const bytes = new Uint8Array(task.bytes ?? []);
  return { outcome: { n: task.n * 2, bytes }, transfer: [bytes.buffer] };
});
`)}`,
);

const refusals: ThreadPoolRefusals = {
  refused: () => gatewayError('overloaded_error', 'refused'),
  cancelled: () => gatewayError('overloaded_error', 'cancelled'),
  shuttingDown: () => gatewayError('overloaded_error', 'shutting down'),
  failed: () => gatewayError('api_error', 'failed'),
};

interface Task {
  n?: number;
  throw?: string;
  spinMs?: number;
  bytes?: Uint8Array;
}

describe('FairThreadPool with serveTasks', () => {
  let pool: FairThreadPool<Task, { n: number; bytes: Uint8Array }>;
  beforeAll(async () => {
    pool = await FairThreadPool.start({
      threads: 1,
      queuedPerAccount: 4,
      queuedTotal: 8,
      script,
      refusals,
      onThreadFailure: () => undefined,
    });
  });
  afterAll(() => pool.close());

  it('answers each task with its outcome, moving transferred buffers both ways', async () => {
    const bytes = new Uint8Array([1, 2, 3]);
    const answer = await pool.run('a', () => ({ task: { n: 21, bytes }, transfer: [bytes.buffer] }));
    expect(answer.ok && answer.value.n).toBe(42);
    expect(answer.ok && [...answer.value.bytes]).toEqual([1, 2, 3]);
    // Moved, not copied: the caller's buffer is detached.
    expect(bytes.byteLength).toBe(0);
  });

  it('fails a task whose work throws with the pool refusal, never the thrown message, and goes on serving', async () => {
    const failed = await pool.run('a', () => ({ task: { throw: 'prompt text' }, transfer: [] }));
    expect(failed).toEqual({ ok: false, error: refusals.failed() });
    const next = await pool.run('a', () => ({ task: { n: 1 }, transfer: [] }));
    expect(next.ok && next.value.n).toBe(2);
  });

  it('prepares a waiting task only when a thread takes it, so that what is made for the thread is not held while it waits', async () => {
    const busy = pool.run('a', () => ({ task: { n: 1, spinMs: 200 }, transfer: [] }));
    const prepare = jest.fn(() => ({ task: { n: 5 }, transfer: [] }));
    const waiting = pool.run('b', prepare);
    expect(prepare).not.toHaveBeenCalled();
    await busy;
    const answer = await waiting;
    expect(answer.ok && answer.value.n).toBe(10);
    expect(prepare).toHaveBeenCalledTimes(1);
  });

  it('refuses a task whose caller has already given up', async () => {
    const controller = new AbortController();
    controller.abort();
    expect(await pool.run('a', () => ({ task: { n: 1 }, transfer: [] }), controller.signal)).toEqual({
      ok: false,
      error: refusals.cancelled(),
    });
  });
});

describe('LargeInputWork', () => {
  let work: LargeInputWork<Task, { n: number; bytes: Uint8Array }>;
  const inline: number[] = [];
  beforeAll(async () => {
    work = await LargeInputWork.start<Task, { n: number; bytes: Uint8Array }>(
      {
        inlineMaxBytes: 4,
        threads: 1,
        queuedPerAccount: 4,
        queuedTotal: 8,
        script,
        refusals: refusalsOfStep('the test step', 'The test service'),
        onThreadFailure: () => undefined,
      },
      (task) => {
        inline.push(task.n ?? 0);
        return { n: (task.n ?? 0) * 2, bytes: task.bytes ?? new Uint8Array() };
      },
    );
  });
  afterAll(() => work.close());

  it('works on a small input inline and on a large one on a thread, with the same outcome', async () => {
    const small = new Uint8Array([1, 2, 3, 4]);
    const large = new Uint8Array([1, 2, 3, 4, 5]);
    const smallAnswer = await work.run('a', small, (bytes) => ({ n: bytes.length, bytes }));
    const largeAnswer = await work.run('a', large, (bytes) => ({ n: bytes.length, bytes }));
    expect(smallAnswer.ok && smallAnswer.value.n).toBe(8);
    expect(largeAnswer.ok && [largeAnswer.value.n, ...largeAnswer.value.bytes]).toEqual([10, 1, 2, 3, 4, 5]);
    expect(inline).toEqual([4]);
    // The thread had a copy of its own: the caller's bytes are whole.
    expect([...large]).toEqual([1, 2, 3, 4, 5]);
  });

  it('words its refusals after the step and the service', async () => {
    const controller = new AbortController();
    controller.abort();
    const large = new Uint8Array(8);
    expect(await work.run('a', large, (bytes) => ({ n: 1, bytes }), controller.signal)).toEqual({
      ok: false,
      error: { type: 'overloaded_error', message: 'The call ended before the test step finished.' },
    });
  });
});
