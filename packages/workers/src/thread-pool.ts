import { Worker } from 'node:worker_threads';
import type { TransferListItem } from 'node:worker_threads';
import { err, ok } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import { FairScheduler, runningShareOf } from './fair-scheduler';
import type { ThreadMessage } from './thread';

/** What the pool answers in its service's words when it cannot give an outcome. */
export interface ThreadPoolRefusals {
  /** The account's queue, or the whole queue, is full. */
  refused(): GatewayError;
  /** The caller gave up before the task finished. */
  cancelled(): GatewayError;
  /** The pool is closing. */
  shuttingDown(): GatewayError;
  /** The thread died or its task threw: the task fails closed. */
  failed(): GatewayError;
}

export interface ThreadPoolOptions {
  /** Worker threads; one account runs on at most half of them, rounded up. */
  threads: number;
  /** Tasks of one account that may wait for a thread. */
  queuedPerAccount: number;
  /** Tasks that may wait for a thread, all accounts together. */
  queuedTotal: number;
  /** The thread's script, a built .js file that calls `serveTasks` (a file: or data: URL too). */
  script: string | URL;
  refusals: ThreadPoolRefusals;
  /** A thread died on its own (a bug, out of memory): its task failed and another thread took its place. */
  onThreadFailure: (failure: ThreadFailure) => void;
}

/** What is known of a thread that died; never its error message, which may quote the task's data. */
export interface ThreadFailure {
  exitCode: number;
  errorName?: string;
  errorCode?: string;
}

/** A task as a thread takes it: `transfer` lists the buffers that move with it instead of being copied. */
export interface PreparedTask<Task> {
  task: Task;
  transfer: readonly TransferListItem[];
}

interface Job<Task, Outcome> {
  account: string;
  /** Called when a thread takes the job, so that what is made for the thread is not held while it waits. */
  prepare: () => PreparedTask<Task>;
  settle: (result: Result<Outcome>) => void;
  /** Set once the job has started on a thread. */
  thread?: Thread<Task, Outcome>;
}

interface Thread<Task, Outcome> {
  worker: Worker;
  /** It loaded its script and said so. */
  ready: boolean;
  job?: Job<Task, Outcome>;
  /** Ended by the pool (its job was cancelled, or shutdown): its exit is no failure. */
  ended: boolean;
  error?: Error;
}

/**
 * CPU-heavy work of requests on worker threads, so that one large request never holds up a service's event
 * loop and with it every other account's calls. Threads are shared fairly between accounts (FairScheduler): a
 * heavy account waits behind itself. A caller that gives up takes its task out of the queue, or ends the thread
 * working on it. A thread that dies fails only its own task and another takes its place.
 */
export class FairThreadPool<Task, Outcome> {
  private readonly scheduler: FairScheduler<Job<Task, Outcome>>;
  private readonly threads = new Set<Thread<Task, Outcome>>();
  private readonly idle: Thread<Task, Outcome>[] = [];
  private readonly pending = new Set<Job<Task, Outcome>>();
  private closed = false;

  private constructor(private readonly options: ThreadPoolOptions) {
    this.scheduler = new FairScheduler<Job<Task, Outcome>>(
      {
        slots: options.threads,
        runningPerAccount: runningShareOf(options.threads),
        queuedPerAccount: options.queuedPerAccount,
        queuedTotal: options.queuedTotal,
      },
      (job) => this.dispatch(job),
    );
  }

  /** Starts every thread; resolves once each has loaded, rejects when one cannot (a missing script). */
  static async start<Task, Outcome>(options: ThreadPoolOptions): Promise<FairThreadPool<Task, Outcome>> {
    const pool = new FairThreadPool<Task, Outcome>(options);
    const loading = Array.from({ length: options.threads }, () => {
      const thread = pool.spawn();
      pool.idle.push(thread);
      return new Promise<void>((resolve, reject) => {
        thread.worker.once('message', () => resolve());
        thread.worker.once('error', reject);
        thread.worker.once('exit', (code) => reject(new Error(`a worker thread exited with ${code} while loading`)));
      });
    });
    try {
      await Promise.all(loading);
    } catch (error) {
      await pool.close();
      throw error;
    }
    return pool;
  }

  /**
   * Runs a task on a thread: at once, after a wait in the account's queue, or refused. `prepare` makes the task
   * when a thread takes it (a copy of a large input made then is not held twice while the task waits); the
   * buffers it lists in `transfer` move to the thread, and the caller must not use them again.
   */
  run(account: string, prepare: () => PreparedTask<Task>, signal?: AbortSignal): Promise<Result<Outcome>> {
    const { refusals } = this.options;
    if (this.closed) return Promise.resolve(err(refusals.shuttingDown()));
    if (signal?.aborted) return Promise.resolve(err(refusals.cancelled()));
    return new Promise((resolve) => {
      const abandon = () => this.abandon(job);
      const job: Job<Task, Outcome> = {
        account,
        prepare,
        settle: (result) => {
          signal?.removeEventListener('abort', abandon);
          resolve(result);
        },
      };
      this.pending.add(job);
      if (this.scheduler.submit(account, job) === 'refused') {
        this.pending.delete(job);
        resolve(err(refusals.refused()));
        return;
      }
      signal?.addEventListener('abort', abandon, { once: true });
    });
  }

  /** Refuses every task not yet answered and ends every thread. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.pending) job.settle(err(this.options.refusals.shuttingDown()));
    this.pending.clear();
    await Promise.all(
      [...this.threads].map((thread) => {
        thread.ended = true;
        return thread.worker.terminate();
      }),
    );
  }

  private spawn(): Thread<Task, Outcome> {
    const thread: Thread<Task, Outcome> = { worker: new Worker(this.options.script), ready: false, ended: false };
    this.threads.add(thread);
    thread.worker.on('message', (message: ThreadMessage<Outcome>) => this.received(thread, message));
    thread.worker.on('error', (error) => (thread.error = error));
    thread.worker.on('exit', (exitCode) => this.exited(thread, exitCode));
    return thread;
  }

  private dispatch(job: Job<Task, Outcome>): void {
    const thread = this.idle.pop() ?? this.spawn();
    thread.job = job;
    job.thread = thread;
    const { task, transfer } = job.prepare();
    thread.worker.postMessage(task, transfer);
  }

  private received(thread: Thread<Task, Outcome>, message: ThreadMessage<Outcome>): void {
    if (message.kind === 'ready') {
      thread.ready = true;
      return;
    }
    const job = thread.job;
    if (!job || thread.ended) return;
    thread.job = undefined;
    this.idle.push(thread);
    this.finish(job, message.kind === 'done' ? ok(message.outcome) : err(this.options.refusals.failed()));
  }

  private exited(thread: Thread<Task, Outcome>, exitCode: number): void {
    this.threads.delete(thread);
    if (thread.ended || this.closed) return;
    const idleAt = this.idle.indexOf(thread);
    if (idleAt >= 0) this.idle.splice(idleAt, 1);
    this.options.onThreadFailure({
      exitCode,
      errorName: thread.error?.name,
      errorCode: (thread.error as NodeJS.ErrnoException | undefined)?.code,
    });
    this.replace(thread);
    if (thread.job) this.finish(thread.job, err(this.options.refusals.failed()));
  }

  /** The caller gave up: its task leaves the queue, or the thread working on it is ended and replaced. */
  private abandon(job: Job<Task, Outcome>): void {
    const thread = job.thread;
    if (thread) {
      thread.ended = true;
      void thread.worker.terminate();
      this.replace(thread);
    } else {
      this.scheduler.withdraw(job.account, job);
    }
    this.finish(job, err(this.options.refusals.cancelled()));
  }

  /**
   * A new thread at once for one that had loaded; a thread that could not load is replaced only when a task
   * needs it, so that a broken script fails requests rather than restarting threads in a loop.
   */
  private replace(thread: Thread<Task, Outcome>): void {
    if (thread.ready) this.idle.push(this.spawn());
  }

  private finish(job: Job<Task, Outcome>, result: Result<Outcome>): void {
    if (!this.pending.delete(job)) return;
    job.settle(result);
    // After settling: the freed slot may start the next job at once, on the thread just returned to idle.
    if (job.thread) this.scheduler.finished(job.account);
  }
}
