import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import { portsFromBase, readEnvFile, repoRoot } from '@gw/local-stack';
import { waitUntil } from '@gw/testing';

const run = promisify(execFile);

/** A whole second stack beside the developer's and the other tests': its own ports and state. */
const portBase = 22_000;
const infraPorts = { GW_PG_PORT: '22432', GW_REDIS_PORT: '22379', GW_KAFKA_PORT: '22092' };

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Processes whose command line names the state directory (PostgreSQL, Redis, Kafka, services' logs). */
async function processesMentioning(text: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(text)) found.push(`${entry}: ${cmdline.replace(/\0/g, ' ')}`);
  }
  return found;
}

/**
 * Whether Jaeger is built already. `make up` builds it the first time (minutes); this test never waits
 * for that: it runs the trace viewer, and checks it, only when the build is cached.
 */
async function traceViewerCached(): Promise<boolean> {
  return run('bash', [join(repoRoot, 'deploy/install-jaeger.sh'), '--cached']).then(
    () => true,
    () => false,
  );
}

describe('make up and make down', () => {
  let state: string;
  let viewer: boolean;
  const env = () => ({
    ...process.env,
    ...infraPorts,
    GW_STATE_DIR: state,
    GW_PORT_BASE: String(portBase),
    GW_TRACE_VIEWER: 'cached',
  });
  const make = (target: string) =>
    run('make', ['--no-print-directory', target], { cwd: repoRoot, env: env(), maxBuffer: 64 * 1024 * 1024 });

  beforeAll(async () => {
    state = await mkdtemp(join(tmpdir(), 'gw-make-up-'));
    viewer = await traceViewerCached();
    // PostgreSQL runs as its own user and must reach its data directory inside.
    await chmod(state, 0o755);
  });

  afterAll(async () => {
    await make('down').catch(() => undefined);
    await rm(state, { recursive: true, force: true });
  });

  it('comes up, serves the SDK, comes up again changing nothing, and goes down leaving nothing running', async () => {
    const first = await make('up');
    expect(first.stdout).toContain('started:');
    const stack = await readEnvFile(join(state, 'stack.env'));
    const ports = portsFromBase(portBase);
    expect(stack).toEqual({
      GW_BASE_URL: `http://127.0.0.1:${ports.http}`,
      GW_ADMIN_URL: `http://127.0.0.1:${ports.admin}`,
      GW_ADMIN_TOKEN: expect.stringMatching(/.{20,}/),
      GW_DEMO_ACCOUNT: expect.stringMatching(/^acct_/),
      GW_DEMO_TEST_KEY: expect.stringMatching(/^gw_test_[A-Za-z0-9]{32}$/),
      GW_DEMO_LIVE_KEY: expect.stringMatching(/^gw_live_[A-Za-z0-9]{32}$/),
      GW_SIM_URLS: Object.values(ports.sim)
        .map((port) => `http://127.0.0.1:${port}`)
        .join(','),
      ...(viewer && { GW_TRACES_URL: `http://127.0.0.1:${ports.traces.ui}` }),
    });
    expect(first.stdout).toContain(viewer ? `traces:    ${stack.GW_TRACES_URL}` : 'traces:    off');
    expect(first.stdout).toContain(stack.GW_DEMO_LIVE_KEY);

    const sdk = new Anthropic({ baseURL: stack.GW_BASE_URL, apiKey: stack.GW_DEMO_TEST_KEY, maxRetries: 0 });
    const message = await sdk.messages.create({
      model: 'claude-sonnet-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(message.type).toBe('message');
    if (viewer) {
      // Every service sends its spans to the viewer: the request's reach it through its query API.
      const services = await waitUntil(
        async () => {
          const response = await fetch(`${stack.GW_TRACES_URL}/api/services`);
          return ((await response.json()) as { data: string[] | null }).data ?? [];
        },
        { what: 'the trace viewer to list the services', timeoutMs: 30_000, intervalMs: 250 },
        (names) => ['ingress', 'auth', 'quota', 'router'].every((name) => names.includes(name)),
      );
      expect(services).toEqual(expect.arrayContaining(['ingress', 'auth', 'quota', 'router']));
    }

    const second = await make('up');
    expect(second.stdout).toContain('already running; nothing changed');
    expect(await readEnvFile(join(state, 'stack.env'))).toEqual(stack);

    await make('down');
    const allPorts = [
      ports.http,
      ports.admin,
      ...Object.values(ports.grpc),
      ...Object.values(ports.metrics),
      ports.sim.eu,
      ports.sim.uk,
      ports.sim.openaiEu,
      ...Object.values(ports.traces),
      ...Object.values(infraPorts).map(Number),
    ];
    const stillListening = (
      await Promise.all(allPorts.map(async (port) => ((await listening(port)) ? port : 0)))
    ).filter((port) => port !== 0);
    expect(stillListening).toEqual([]);
    expect(await processesMentioning(state)).toEqual([]);
  }, 600_000);
});
