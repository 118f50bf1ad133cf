import { spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The peer of the comparison: Portkey's open-source gateway (`@portkey-ai/gateway`, pinned in
 * package.json), started from npm as its README says (`node build/start-server.js --port=N`, headless:
 * no console UI), on loopback, as a process of its own. A request picks its upstream with headers:
 * `x-portkey-provider: anthropic` and `x-portkey-custom-host: <mock>/v1`, on Portkey's Anthropic-format
 * route `POST /v1/messages`.
 */

/** A gateway the benchmark compares with this one (the peer, the bare forwarder): one process of its own. */
export interface ComparedGateway {
  pid: number;
  /** http://127.0.0.1:port, no trailing slash. */
  baseUrl: string;
  /** The headers that route a request to the Anthropic-format upstream at upstreamUrl. */
  headersFor(upstreamUrl: string): Record<string, string>;
  stop(): Promise<void>;
}

export const peerPackage = '@portkey-ai/gateway';

const packageJson = () => require.resolve(`${peerPackage}/package.json`);

export function peerVersion(): string {
  return (JSON.parse(readFileSync(packageJson(), 'utf8')) as { version: string }).version;
}

export async function startPeerGateway(port: number, logFile: string): Promise<ComparedGateway> {
  const entry = join(dirname(packageJson()), 'build', 'start-server.js');
  const log = createWriteStream(logFile);
  const child = spawn(
    process.execPath,
    ['--require', join(__dirname, 'loopback-only.js'), entry, `--port=${port}`, '--headless'],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_ENV: 'production' } },
  );
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    log.end();
  };
  // Up when its port answers HTTP (any status), for up to 20 s.
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${peerPackage} exited with code ${child.exitCode} (log ${logFile})`);
    const up = await fetch(`${baseUrl}/`, { signal: AbortSignal.timeout(1_000) }).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${peerPackage} did not answer on ${baseUrl} within 20 s (log ${logFile})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    pid: child.pid!,
    baseUrl,
    headersFor: (upstreamUrl) => ({
      'x-portkey-provider': 'anthropic',
      'x-portkey-custom-host': `${upstreamUrl}/v1`,
      // The mock takes any key; Portkey passes it on as Anthropic's x-api-key.
      'x-api-key': 'sk-bench-peer',
    }),
    stop,
  };
}
