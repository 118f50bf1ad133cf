import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** The compiled quota service, found through the workspace dependency on @gw/quota. */
const quotaMain = require.resolve('@gw/quota/dist/main.js');

export interface QuotaProcess {
  /** 127.0.0.1:<port> of its gRPC server. */
  address: string;
  /** CPU seconds the process has used so far (Linux /proc). */
  cpuSeconds(): Promise<number>;
  stop(): Promise<void>;
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on every Linux build we run). */
const clockTicksPerSecond = 100;

/** User + system CPU seconds of a process, from fields 14 and 15 of /proc/<pid>/stat. */
async function procCpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces; the fields after it start past its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicksPerSecond;
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
      // Plaintext on loopback: the benchmark measures the decision, not TLS.
      GRPC_INSECURE: 'true',
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
  return { address: `127.0.0.1:${port}`, cpuSeconds: () => procCpuSeconds(child.pid!), stop };
}
