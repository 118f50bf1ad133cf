import { Worker } from 'node:worker_threads';
import { err, gatewayError, ok } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import { FairScheduler, runningShareOf } from './fair-scheduler';
import type { PrivacyMode, PrivacyOutcome } from './privacy';
import type { ThreadMessage, ThreadTask } from './privacy-thread';
import { privacyStepFailed } from './privacy-step';

export interface PrivacyPoolOptions {
  /** Worker threads; one account runs on at most half of them, rounded up. */
  threads: number;
  /** Bodies of one account that may wait for a thread. */
  queuedPerAccount: number;
  /** Bodies that may wait for a thread, all accounts together. */
  queuedTotal: number;
  /** The thread's script: dist/privacy-thread.js as built by tsc (a file: or data: URL too). */
  script: string | URL;
  /** A thread died on its own (a bug, out of memory): its request failed and another thread took its place. */
  onThreadFailure: (failure: ThreadFailure) => void;
}

/** What is known of a thread that died; never its error message, which may quote the body. */
export interface ThreadFailure {
  exitCode: number;
  errorName?: string;
  errorCode?: string;
}

interface Job {
  account: string;
  mode: PrivacyMode;
  body: Uint8Array;
  settle: (result: Result<PrivacyOutcome>) => void;
  /** Set once the job has started on a thread. */
  thread?: Thread;
}

interface Thread {
  worker: Worker;
  /** It loaded its script and said so. */
  ready: boolean;
  job?: Job;
  /** Ended by the pool (its job was cancelled, or shutdown): its exit is no failure. */
  ended: boolean;
  error?: Error;
}

const refusedError = (): GatewayError =>
  gatewayError(
    'overloaded_error',
    'Too many large requests of this account are waiting for the privacy step. Retry with exponential backoff.',
    { retryAfterMs: 1_000 },
  );

const cancelledError = (): GatewayError =>
  gatewayError('overloaded_error', 'The call ended before the privacy step finished.');

const shuttingDownError = (): GatewayError =>
  gatewayError('overloaded_error', 'The policy service is shutting down. Retry.', { retryAfterMs: 1_000 });

/**
 * The privacy modes on worker threads, so that a large body never holds up policy's other calls. Threads are
 * shared fairly between accounts (FairScheduler); a caller that gives up takes its body out of the queue, or
 * ends the thread working on it. A thread that dies fails only its own request (fail closed: api_error, the
 * body is never forwarded) and another takes its place.
 */
export class PrivacyPool {
  private readonly scheduler: FairScheduler<Job>;
  private readonly threads = new Set<Thread>();
  private readonly idle: Thread[] = [];
  private readonly pending = new Set<Job>();
  private closed = false;

  private constructor(private readonly options: PrivacyPoolOptions) {
    this.scheduler = new FairScheduler<Job>(
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
  static async start(options: PrivacyPoolOptions): Promise<PrivacyPool> {
    const pool = new PrivacyPool(options);
    const loading = Array.from({ length: options.threads }, () => {
      const thread = pool.spawn();
      pool.idle.push(thread);
      return new Promise<void>((resolve, reject) => {
        thread.worker.once('message', () => resolve());
        thread.worker.once('error', reject);
        thread.worker.once('exit', (code) => reject(new Error(`a privacy thread exited with ${code} while loading`)));
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

  /** Applies the mode to the body on a thread: at once, after a wait in the account's queue, or refused. */
  run(account: string, mode: PrivacyMode, body: Uint8Array, signal: AbortSignal): Promise<Result<PrivacyOutcome>> {
    if (this.closed) return Promise.resolve(err(shuttingDownError()));
    if (signal.aborted) return Promise.resolve(err(cancelledError()));
    return new Promise((resolve) => {
      const abandon = () => this.abandon(job);
      const job: Job = {
        account,
        mode,
        body,
        settle: (result) => {
          signal.removeEventListener('abort', abandon);
          resolve(result);
        },
      };
      this.pending.add(job);
      if (this.scheduler.submit(account, job) === 'refused') {
        this.pending.delete(job);
        resolve(err(refusedError()));
        return;
      }
      signal.addEventListener('abort', abandon, { once: true });
    });
  }

  /** Refuses every request not yet answered and ends every thread. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.pending) job.settle(err(shuttingDownError()));
    this.pending.clear();
    await Promise.all(
      [...this.threads].map((thread) => {
        thread.ended = true;
        return thread.worker.terminate();
      }),
    );
  }

  private spawn(): Thread {
    const thread: Thread = { worker: new Worker(this.options.script), ready: false, ended: false };
    this.threads.add(thread);
    thread.worker.on('message', (message: ThreadMessage) => this.received(thread, message));
    thread.worker.on('error', (error) => (thread.error = error));
    thread.worker.on('exit', (exitCode) => this.exited(thread, exitCode));
    return thread;
  }

  private dispatch(job: Job): void {
    const thread = this.idle.pop() ?? this.spawn();
    thread.job = job;
    job.thread = thread;
    // The request's bytes are a view into gRPC's whole message: one copy into a buffer of its own, which then
    // moves to the thread instead of being cloned.
    const body = new Uint8Array(job.body);
    thread.worker.postMessage({ mode: job.mode, body } satisfies ThreadTask, [body.buffer]);
  }

  private received(thread: Thread, message: ThreadMessage): void {
    if (message.kind === 'ready') {
      thread.ready = true;
      return;
    }
    const job = thread.job;
    if (!job || thread.ended) return;
    thread.job = undefined;
    this.idle.push(thread);
    this.finish(job, message.kind === 'done' ? ok(message.outcome) : err(privacyStepFailed()));
  }

  private exited(thread: Thread, exitCode: number): void {
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
    if (thread.job) this.finish(thread.job, err(privacyStepFailed()));
  }

  /** The caller gave up: its body leaves the queue, or the thread working on it is ended and replaced. */
  private abandon(job: Job): void {
    const thread = job.thread;
    if (thread) {
      thread.ended = true;
      void thread.worker.terminate();
      this.replace(thread);
    } else {
      this.scheduler.withdraw(job.account, job);
    }
    this.finish(job, err(cancelledError()));
  }

  /**
   * A new thread at once for one that had loaded; a thread that could not load is replaced only when a job
   * needs it, so that a broken script fails requests rather than restarting threads in a loop.
   */
  private replace(thread: Thread): void {
    if (thread.ready) this.idle.push(this.spawn());
  }

  private finish(job: Job, result: Result<PrivacyOutcome>): void {
    if (!this.pending.delete(job)) return;
    job.settle(result);
    // After settling: the freed slot may start the next job at once, on the thread just returned to idle.
    if (job.thread) this.scheduler.finished(job.account);
  }
}
