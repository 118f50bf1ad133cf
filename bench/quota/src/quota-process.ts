import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** The compiled quota service, found through the workspace dependency on @gw/quota. */
const quotaMain = require.resolve('@gw/quota/dist/main.js');

export interface QuotaProcess {
  /** 127.0.0.1:<port> of its gRPC server. */
  address: string;
  stop(): Promise<void>;
}

function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  return Promise.race([promise.then(() => true), timedOut]).finally(() => clearTimeout(timer));
}

/**
 * Starts `node services/quota/dist/main.js` on loopback with the given environment. Its gRPC port is
 * 0, so the kernel picks a free one and the process reports it in its "quota serving" log line.
 */
export async function startQuotaProcess(env: Record<string, string>, startTimeoutMs = 15_000): Promise<QuotaProcess> {
  const child: ChildProcess = spawn(process.execPath, [quotaMain], {
    env: {
      ...process.env,
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: '0',
      METRICS_HOST: '127.0.0.1',
      METRICS_PORT: '0',
      REDIS_CLUSTER_NODES: '',
      ...env,
      // The "quota serving" line at info level carries the port.
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  let output = '';
  const keep = (line: string) => {
    output = `${output}${line}\n`.slice(-4_000);
  };
  child.stderr!.on('data', (chunk: Buffer) => keep(chunk.toString()));

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      if (!(await settlesWithin(exited, 8_000))) {
        child.kill('SIGKILL');
        await settlesWithin(exited, 2_000);
      }
    }
    process.removeListener('exit', killOnExit);
  };

  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`quota did not report serving within ${startTimeoutMs} ms; it printed:\n${output}`)),
      startTimeoutMs,
    );
    // Every stdout line is read (and dropped once serving), so the pipe never fills.
    createInterface({ input: child.stdout! }).on('line', (line) => {
      keep(line);
      try {
        const entry = JSON.parse(line) as { msg?: string; grpc_port?: number };
        if (entry.msg === 'quota serving' && typeof entry.grpc_port === 'number') {
          clearTimeout(timer);
          resolve(entry.grpc_port);
        }
      } catch {
        // Not a log line.
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`quota exited before serving; it printed:\n${output}`));
    });
  }).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  return { address: `127.0.0.1:${port}`, stop };
}
