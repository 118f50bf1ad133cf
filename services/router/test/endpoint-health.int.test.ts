import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Result } from '@gw/errors';
import { createServiceClient, isServing } from '@gw/grpc';
import type { MethodsOf, ServiceClient } from '@gw/grpc';
import { commonv1, routerv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import { startSimUpstream } from '../../../bench/sim-upstream/src';
import type { RecordedRequest, RunningSimUpstream } from '../../../bench/sim-upstream/src';
import { spawnRouter } from './router-process';
import { waitUntil } from '@gw/testing';

/**
 * Endpoint choice, circuit breakers, active health checks and the headers timeout, against the
 * compiled router (build first: `pnpm exec tsc -b services/router`) as a real process over real
 * gRPC, its pools pointed at in-process simulated upstreams. The router runs with short timeouts
 * (headers 800 ms, probes every 300 ms, ejection after 3 failures for 60 s) so that what takes
 * seconds in production takes a moment here; a 60 s ejection means that only a probe re-admits an
 * endpoint within a test.
 *
 * The `sim:` texts of a request reach every endpoint alike; to make one endpoint misbehave, a small
 * relay in front of its simulator adds a `sim:` text to the prompts it forwards (and can fail the
 * health probes).
 */

const headersTimeoutMs = 800;
const probeIntervalMs = 300;
const ejectAfterFailures = 3;

interface Relay {
  url: string;
  /** Appended to the last user message of every Messages request forwarded. */
  inject: string | undefined;
  /** Answer the health probes (GET) with 503 instead of forwarding them. */
  failProbes: boolean;
  close(): Promise<void>;
}

async function readAll(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function withInjected(raw: Buffer, text: string): Buffer {
  const body = JSON.parse(raw.toString('utf8')) as { messages: { role: string; content: unknown }[] };
  const last = body.messages.findLast((message) => message.role === 'user')!;
  last.content = typeof last.content === 'string' ? `${last.content} ${text}` : last.content;
  return Buffer.from(JSON.stringify(body));
}

async function startRelay(target: string): Promise<Relay> {
  const server: Server = createServer((incoming, outgoing) => {
    void (async () => {
      if (incoming.method === 'GET' && relay.failProbes) {
        outgoing.writeHead(503, { 'content-type': 'application/json' }).end('{"type":"error"}');
        return;
      }
      let body = await readAll(incoming);
      if (incoming.method === 'POST' && relay.inject !== undefined) body = withInjected(body, relay.inject);
      const headers = { ...incoming.headers, 'content-length': String(body.length) };
      const forwarded = httpRequest(`${target}${incoming.url}`, { method: incoming.method, headers }, (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      });
      forwarded.on('error', () => outgoing.destroy());
      // The router went away (a timeout, a cancel): so does the request to the simulator.
      outgoing.on('close', () => {
        if (!outgoing.writableFinished) forwarded.destroy();
      });
      forwarded.end(body);
    })();
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const relay: Relay = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    inject: undefined,
    failProbes: false,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
  return relay;
}

async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

/** Each simulator by name; `restart` brings a closed one back on the same port. */
const sims: Record<string, RunningSimUpstream> = {};
async function startSim(name: string, port = 0): Promise<RunningSimUpstream> {
  sims[name] = await startSimUpstream({ host: '127.0.0.1', port });
  return sims[name];
}

let relayFlaky: Relay;
let relaySlow: Relay;
let router: ChildProcess;
let routerLogs: string[];
let metricsUrl: string;
let configDir: string;
let client: ServiceClient<MethodsOf<typeof routerv1.RouterService>> & { close(): void };
/** Endpoint URLs by pool, as the YAML gives them. */
let endpoints: { pairA: string; pairB: string; flaky: string; steady: string; slow: string; uk: string };

function gatewayYaml(): string {
  return `
regions:
  - { id: eu-west, jurisdiction: eu }
  - { id: uk-south, jurisdiction: uk }
pools:
  - { id: eu-pair, region: eu-west, adapter: anthropic, endpoints: [{ url: '${endpoints.pairA}' }, { url: '${endpoints.pairB}' }] }
  - { id: eu-flaky, region: eu-west, adapter: anthropic, endpoints: [{ url: '${endpoints.flaky}' }, { url: '${endpoints.steady}' }] }
  - { id: eu-slow, region: eu-west, adapter: anthropic, endpoints: [{ url: '${endpoints.slow}' }] }
  - { id: uk-one, region: uk-south, adapter: anthropic, endpoints: [{ url: '${endpoints.uk}' }] }
models:
  - alias: claude-int
    displayName: Claude Int
    createdAt: '2025-01-01T00:00:00Z'
    pricing: { inputGbpPerMtok: 1, outputGbpPerMtok: 5 }
    servedBy:
      - { pool: eu-pair, upstreamModel: claude-int-upstream }
      - { pool: eu-flaky, upstreamModel: claude-int-upstream }
      - { pool: eu-slow, upstreamModel: claude-int-upstream }
      - { pool: uk-one, upstreamModel: claude-int-upstream }
plans:
  - id: int
    residency: [eu, uk]
    models: all
    limits: { requestsPerMinute: 100, concurrency: 10, monthlyTokens: 1000000 }
    overage: { enabled: false, gbpPerMtok: 0 }
`;
}

async function startRouter(configPath: string, metricsPort: number): Promise<string> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GATEWAY_CONFIG: configPath,
    GRPC_PORT: '0',
    GRPC_INSECURE: 'true',
    METRICS_PORT: String(metricsPort),
    // Debug: the accepted attempt's line is a debug line since the completion's own line is the info one.
    LOG_LEVEL: 'debug',
    UPSTREAM_STREAM_HEADERS_TIMEOUT_MS: String(headersTimeoutMs),
    UPSTREAM_MESSAGE_TIMEOUT_MS: String(headersTimeoutMs),
    UPSTREAM_HEALTH_INTERVAL_MS: String(probeIntervalMs),
    UPSTREAM_HEALTH_TIMEOUT_MS: '200',
    UPSTREAM_EJECT_AFTER_FAILURES: String(ejectAfterFailures),
    UPSTREAM_EJECT_BASE_MS: '60000',
    UPSTREAM_EJECT_MAX_MS: '60000',
  };
  const started = await spawnRouter(env);
  router = started.process;
  routerLogs = started.logs;
  return started.address;
}

beforeAll(async () => {
  for (const name of ['pairA', 'pairB', 'flaky', 'steady', 'slow', 'uk']) await startSim(name);
  relayFlaky = await startRelay(sims.flaky!.url);
  relaySlow = await startRelay(sims.slow!.url);
  endpoints = {
    pairA: sims.pairA!.url,
    pairB: sims.pairB!.url,
    flaky: relayFlaky.url,
    steady: sims.steady!.url,
    slow: relaySlow.url,
    uk: sims.uk!.url,
  };
  configDir = await mkdtemp(join(tmpdir(), 'router-health-int-'));
  const configPath = join(configDir, 'gateway.yaml');
  await writeFile(configPath, gatewayYaml());
  const metricsPort = await freePort();
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  const address = await startRouter(configPath, metricsPort);
  expect(await isServing(address, { kind: 'plaintext' })).toBe(true);
  client = createServiceClient(routerv1.RouterService, {
    address,
    callee: 'router',
    defaultTimeoutMs: 20_000,
    transport: { kind: 'plaintext' },
  });
});

afterAll(async () => {
  client?.close();
  if (router && router.exitCode === null) {
    router.kill('SIGTERM');
    await once(router, 'exit');
  }
  await relayFlaky?.close();
  await relaySlow?.close();
  await Promise.all(Object.values(sims).map((sim) => sim.close()));
  if (configDir) await rm(configDir, { recursive: true, force: true });
});

beforeEach(async () => {
  await Promise.all(
    Object.values(sims).map((sim) => fetch(`${sim.url}/_sim/requests`, { method: 'DELETE' }).catch(() => undefined)),
  );
});

async function simRequests(name: string): Promise<RecordedRequest[]> {
  return (await (await fetch(`${sims[name]!.url}/_sim/requests`)).json()) as RecordedRequest[];
}

type CompleteRequestInit = MessageInitShape<typeof routerv1.CompleteRequestSchema>;

function completeRequest(text: string, pools: string[], stream = false): CompleteRequestInit {
  const body = {
    model: 'claude-int',
    max_tokens: 256,
    messages: [{ role: 'user', content: text }],
    ...(stream ? { stream: true } : {}),
  };
  return {
    requestId: `req_health${Math.random().toString(36).slice(2, 12)}`,
    key: {
      keyId: 'key_int',
      accountId: 'acct_int',
      environment: commonv1.Environment.LIVE,
      residency: commonv1.Residency.EU,
    },
    model: 'claude-int',
    pools: pools.map((poolId) => ({ poolId, upstreamModel: 'claude-int-upstream' })),
    bodyJson: Buffer.from(JSON.stringify(body)),
    stream,
    headers: { 'anthropic-version': '2023-06-01' },
  };
}

async function complete(request: CompleteRequestInit): Promise<Result<routerv1.CompleteResponse>[]> {
  const items: Result<routerv1.CompleteResponse>[] = [];
  for await (const item of client.complete(request)) items.push(item);
  return items;
}

function kinds(items: Result<routerv1.CompleteResponse>[]): string[] {
  return items.map((item) => {
    if (!item.ok) return `error:${item.error.type}`;
    const { event } = item.value;
    return event.case === 'sse' ? event.value.event : (event.case ?? 'empty');
  });
}

function startedPool(items: Result<routerv1.CompleteResponse>[]): string | undefined {
  const first = items[0];
  return first?.ok && first.value.event.case === 'started' ? first.value.event.value.poolId : undefined;
}

/** A sample of the router's Prometheus text, by metric name and the given labels. */
async function metric(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const text = await (await fetch(metricsUrl)).text();
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)\{(.*)\} (\S+)$/.exec(line);
    if (match?.[1] !== name) continue;
    const found = Object.fromEntries([...match[2]!.matchAll(/(\w+)="([^"]*)"/g)].map(([, key, value]) => [key, value]));
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(match[3]);
  }
  return undefined;
}

const healthy = (pool: string, endpoint: string) => metric('router_endpoint_healthy', { pool, endpoint });

const waitFor = (check: () => Promise<boolean>, timeoutMs = 5000) =>
  waitUntil(check, { what: 'the router to reach the state the test expects', timeoutMs, intervalMs: 25 });

describe('router endpoint health over gRPC', () => {
  it('exposes every endpoint as healthy, with nothing outstanding, from the start', async () => {
    expect(await healthy('eu-pair', endpoints.pairA)).toBe(1);
    expect(await healthy('uk-one', endpoints.uk)).toBe(1);
    expect(await metric('router_endpoint_outstanding_requests', { pool: 'eu-pair', endpoint: endpoints.pairB })).toBe(
      0,
    );
    expect(await metric('router_endpoint_ejections_total', { pool: 'eu-flaky', endpoint: endpoints.flaky })).toBe(0);
  });

  it('spreads sequential requests over the endpoints of a pool', async () => {
    for (let i = 0; i < 4; i += 1)
      expect(startedPool(await complete(completeRequest('spread', ['eu-pair'])))).toBe('eu-pair');
    expect((await simRequests('pairA')).length).toBe(2);
    expect((await simRequests('pairB')).length).toBe(2);
  });

  it('serves from another endpoint of the pool when one is down', async () => {
    const port = sims.pairA!.port;
    await sims.pairA!.close();
    try {
      for (let i = 0; i < 3; i += 1) {
        const items = await complete(completeRequest('one down', ['eu-pair']));
        expect(kinds(items)).toEqual(['started', 'message', 'finished']);
        expect(startedPool(items)).toBe('eu-pair');
      }
      expect((await simRequests('pairB')).length).toBe(3);
    } finally {
      await startSim('pairA', port);
    }
    // Probes see it back: the next test starts with both endpoints admitted.
    await waitFor(async () => (await healthy('eu-pair', endpoints.pairA)) === 1);
  });

  it('answers overloaded_error when every endpoint of the tier is saturated, and never asks the other jurisdiction', async () => {
    const items = await complete(completeRequest('sim:error=529 sim:retry-after=2', ['eu-pair', 'uk-one']));
    expect(items).toEqual([
      { ok: false, error: expect.objectContaining({ type: 'overloaded_error', retryAfterMs: 2000 }) },
    ]);
    expect((await simRequests('pairA')).length + (await simRequests('pairB')).length).toBe(2);
    expect(await simRequests('uk')).toEqual([]);
  });

  it('answers api_error when every endpoint of the tier is down, and never asks the other jurisdiction', async () => {
    const ports = [sims.pairA!.port, sims.pairB!.port];
    const logsBefore = routerLogs.length;
    await Promise.all([sims.pairA!.close(), sims.pairB!.close()]);
    try {
      const items = await complete(completeRequest('all down', ['eu-pair', 'uk-one']));
      expect(kinds(items)).toEqual(['error:api_error']);
      // Once the breakers have ejected both (the probes fail too), they are still tried rather than
      // refused untried. The ejections are read from the router's log: the health gauge drops earlier.
      const ejected = (endpoint: string) =>
        routerLogs
          .slice(logsBefore)
          .some((line) => line.includes('"upstream endpoint ejected"') && line.includes(`"endpoint":"${endpoint}"`));
      await waitFor(async () => ejected(endpoints.pairA) && ejected(endpoints.pairB));
      expect(kinds(await complete(completeRequest('all ejected', ['eu-pair', 'uk-one'])))).toEqual(['error:api_error']);
      // The router's log line reaches the pipe a moment after its answer.
      await waitFor(async () => routerLogs.some((line) => line.includes('every candidate endpoint is ejected')));
      expect(await simRequests('uk')).toEqual([]);
    } finally {
      await startSim('pairA', ports[0]);
      await startSim('pairB', ports[1]);
    }
    await waitFor(
      async () =>
        (await healthy('eu-pair', endpoints.pairA)) === 1 && (await healthy('eu-pair', endpoints.pairB)) === 1,
    );
    expect(await simRequests('uk')).toEqual([]);
  });

  it.each([false, true])(
    'fails over to the next pool when the first byte is slow (stream: %s), and closes the slow request',
    async (stream) => {
      relaySlow.inject = 'sim:latency=5000';
      try {
        const request = completeRequest('slow first byte', ['eu-slow', 'eu-pair'], stream);
        const began = Date.now();
        const items = await complete(request);
        const tookMs = Date.now() - began;
        expect(kinds(items)[0]).toBe('started');
        expect(kinds(items).at(-1)).toBe('finished');
        expect(startedPool(items)).toBe('eu-pair');
        // undici's timeouts are accurate to about half a second; the upstream would have taken 5 s.
        expect(tookMs).toBeGreaterThanOrEqual(headersTimeoutMs / 2);
        expect(tookMs).toBeLessThan(3000);
        const attemptsOf = () =>
          routerLogs
            .map((line) => JSON.parse(line) as Record<string, unknown>)
            .filter((entry) => entry.request_id === request.requestId && entry.upstream_call === 'messages');
        // The router's stdout may still be on its way after the reply.
        await waitFor(async () => attemptsOf().length >= 2, 2000);
        expect(attemptsOf().map((entry) => [entry.pool_id, entry.failure ?? entry.status])).toEqual([
          ['eu-slow', 'timeout'],
          ['eu-pair', 200],
        ]);
        await waitFor(async () => (await simRequests('slow')).at(-1)?.outcome === 'client_closed', 2000);
        expect(await simRequests('slow')).toHaveLength(1);
      } finally {
        relaySlow.inject = undefined;
      }
    },
  );

  it('ends with an error after Started when the upstream breaks after the first byte, without failing over', async () => {
    const items = await complete(completeRequest('one two three four sim:drop-after=2', ['eu-pair', 'eu-flaky'], true));
    expect(kinds(items)).toEqual([
      'started',
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'error:api_error',
    ]);
    const received = [
      ...(await simRequests('pairA')),
      ...(await simRequests('pairB')),
      ...(await simRequests('flaky')),
      ...(await simRequests('steady')),
    ];
    expect(received.map((request) => request.outcome)).toEqual(['dropped']);
  });

  it('ejects an endpoint that keeps failing, so later requests go straight to the healthy one', async () => {
    relayFlaky.inject = 'sim:error=503';
    relayFlaky.failProbes = true;
    try {
      const flakyCounts: number[] = [];
      for (let i = 0; i < 10; i += 1) {
        const items = await complete(completeRequest(`flaky ${i}`, ['eu-flaky']));
        expect(startedPool(items)).toBe('eu-flaky');
        flakyCounts.push((await simRequests('flaky')).length);
      }
      expect(await healthy('eu-flaky', endpoints.flaky)).toBe(0);
      expect(await metric('router_endpoint_ejections_total', { pool: 'eu-flaky', endpoint: endpoints.flaky })).toBe(1);
      // At most N failures reach it (failed probes count too), then nothing more.
      expect(flakyCounts.at(-1)).toBeLessThanOrEqual(ejectAfterFailures);
      expect(flakyCounts.slice(-5)).toEqual(Array<number>(5).fill(flakyCounts.at(-1)!));
      expect((await simRequests('steady')).length).toBe(10);
      expect(routerLogs.join('\n')).toContain('upstream endpoint ejected');
    } finally {
      relayFlaky.inject = undefined;
      relayFlaky.failProbes = false;
    }
  });

  it('re-admits an ejected endpoint once its health probe succeeds again', async () => {
    // From the previous test: the flaky endpoint is ejected for 60 s, and answers probes again now.
    await waitFor(async () => (await healthy('eu-flaky', endpoints.flaky)) === 1, 3000);
    expect(routerLogs.join('\n')).toMatch(/"readmitted_by":"probe".*upstream endpoint readmitted/);
    for (let i = 0; i < 4; i += 1) await complete(completeRequest(`back ${i}`, ['eu-flaky']));
    expect((await simRequests('flaky')).map((request) => request.outcome)).toEqual(['completed', 'completed']);
    expect((await simRequests('steady')).length).toBe(2);
  });

  it('re-admits a restarted endpoint that probes had ejected while it was down', async () => {
    const port = sims.pairB!.port;
    await sims.pairB!.close();
    await waitFor(async () => (await healthy('eu-pair', endpoints.pairB)) === 0, 3000);
    for (let i = 0; i < 3; i += 1) await complete(completeRequest(`b down ${i}`, ['eu-pair']));
    expect((await simRequests('pairA')).length).toBe(3);
    await startSim('pairB', port);
    await waitFor(async () => (await healthy('eu-pair', endpoints.pairB)) === 1, 3000);
    for (let i = 0; i < 4; i += 1) await complete(completeRequest(`b back ${i}`, ['eu-pair']));
    expect((await simRequests('pairB')).length).toBe(2);
  });

  it('counts nothing outstanding once every call is over', async () => {
    for (const [pool, endpoint] of [
      ['eu-pair', endpoints.pairA],
      ['eu-pair', endpoints.pairB],
      ['eu-flaky', endpoints.flaky],
      ['eu-flaky', endpoints.steady],
      ['eu-slow', endpoints.slow],
    ] as const) {
      expect(await metric('router_endpoint_outstanding_requests', { pool, endpoint })).toBe(0);
    }
  });
});
