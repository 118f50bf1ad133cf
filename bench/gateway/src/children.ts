import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { LoadJob, LoadResult } from './load-protocol';
import type { ComparedGateway } from './peer-gateway';

/**
 * A helper process of the benchmark (load generator, mock upstream, bare forwarder), spoken to over IPC: it sends
 * one message when ready, then one answer per request. Requests are sequential.
 */
class HelperProcess {
  private readonly exited: Promise<void>;

  private constructor(
    readonly name: string,
    private readonly child: ChildProcess,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Forks dist/<script> and waits for its first message, which it returns. */
  static async start(name: string, script: string, args: string[]): Promise<{ helper: HelperProcess; ready: unknown }> {
    const child = fork(join(__dirname, script), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const helper = new HelperProcess(name, child);
    const ready = await helper.nextMessage(10_000);
    return { helper, ready };
  }

  request(message: unknown, timeoutMs: number): Promise<unknown> {
    const answer = this.nextMessage(timeoutMs);
    this.child.send(message as object);
    return answer;
  }

  /** Disconnects (the helper then exits by itself); SIGKILL if it is still there after 5 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    if (this.child.connected) this.child.disconnect();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await this.exited;
    clearTimeout(timer);
  }

  private nextMessage(timeoutMs: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const onMessage = (message: unknown) => settle(() => resolve(message));
      const onExit = (code: number | null, signal: string | null) =>
        settle(() => reject(new Error(`${this.name} exited (${signal ?? `code ${code}`})`)));
      const timer = setTimeout(
        () => settle(() => reject(new Error(`${this.name} gave no answer within ${timeoutMs} ms`))),
        timeoutMs,
      );
      const settle = (done: () => void) => {
        clearTimeout(timer);
        this.child.off('message', onMessage);
        this.child.off('exit', onExit);
        done();
      };
      this.child.once('message', onMessage);
      this.child.once('exit', onExit);
    });
  }
}

export interface LoadGenerator {
  pid: number;
  run(job: LoadJob): Promise<LoadResult>;
  stop(): Promise<void>;
}

export async function startLoadGenerator(): Promise<LoadGenerator> {
  const { helper } = await HelperProcess.start('the load generator', 'load-worker.js', []);
  return {
    pid: helper.pid,
    // A job ends by its own bounds; the margin covers its last requests' timeouts, and an open loop's
    // late sends when the generator's own event loop falls behind.
    run: async (job) =>
      (await helper.request(
        job,
        (job.durationMs ?? 600_000) + job.timeoutMs + (job.ratePerSecond === undefined ? 5_000 : 30_000),
      )) as LoadResult,
    stop: () => helper.stop(),
  };
}

export interface MockUpstreamProcess {
  pid: number;
  /** One URL per listener, in the order asked. */
  urls: string[];
  stop(): Promise<void>;
}

export async function startMockUpstreamProcess(
  listeners: { port: number; latencyMs: number }[],
): Promise<MockUpstreamProcess> {
  const { helper, ready } = await HelperProcess.start(
    'the mock upstream',
    'mock-upstream-main.js',
    listeners.map(({ port, latencyMs }) => `${port}:${latencyMs}`),
  );
  return { pid: helper.pid, urls: (ready as { urls: string[] }).urls, stop: () => helper.stop() };
}

export async function startBareForwarderProcess(port: number): Promise<ComparedGateway> {
  const { helper } = await HelperProcess.start('the bare forwarder', 'bare-forwarder-main.js', [String(port)]);
  return {
    pid: helper.pid,
    baseUrl: `http://127.0.0.1:${port}`,
    headersFor: (upstreamUrl) => ({ 'x-forward-to': upstreamUrl }),
    stop: () => helper.stop(),
  };
}
