import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Result } from '@gw/errors';
import { createServiceClient, isServing } from '@gw/grpc';
import type { MethodsOf, ServiceClient } from '@gw/grpc';
import { commonv1, routerv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import { echoChunks, estimateInputTokens, startSimUpstream } from '../../../bench/sim-upstream/src';
import type { RecordedRequest, RunningSimUpstream } from '../../../bench/sim-upstream/src';
import { spawnRouter } from './router-process';
import { waitUntil } from '@gw/testing';

/**
 * The compiled router as a real process (build first: `pnpm exec tsc -b services/router`), its
 * pools pointed at an in-process simulated upstream, called over real gRPC.
 */

const upstreamKey = 'sim-upstream-key-for-router-int';
/** Appears in every prompt, so that the test can check the router never logs one. */
const promptMarker = 'zebra4711';

let sim: RunningSimUpstream;
let router: ChildProcess;
let routerLogs: string[];
let configDir: string;
let client: ServiceClient<MethodsOf<typeof routerv1.RouterService>> & { close(): void };

/** A port nothing listens on: connections to it are refused. */
async function refusedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return `http://127.0.0.1:${port}`;
}

function gatewayYaml(simUrl: string, deadUrl: string): string {
  return `
regions:
  - { id: eu-west, jurisdiction: eu }
  - { id: uk-south, jurisdiction: uk }
pools:
  - id: eu-primary
    region: eu-west
    adapter: anthropic
    endpoints: [{ url: '${deadUrl}' }, { url: '${simUrl}' }]
    credentialEnv: ROUTER_INT_UPSTREAM_KEY
  - { id: eu-dead, region: eu-west, adapter: anthropic, endpoints: [{ url: '${deadUrl}' }] }
  - { id: eu-unkeyed, region: eu-west, adapter: anthropic, endpoints: [{ url: '${simUrl}' }], credentialEnv: ROUTER_INT_UNSET_KEY }
  - { id: uk-primary, region: uk-south, adapter: anthropic, endpoints: [{ url: '${simUrl}' }], credentialEnv: ROUTER_INT_UPSTREAM_KEY }
models:
  - alias: claude-int
    displayName: Claude Int
    createdAt: '2025-01-01T00:00:00Z'
    pricing: { inputGbpPerMtok: 1, outputGbpPerMtok: 5 }
    servedBy:
      - { pool: eu-primary, upstreamModel: claude-int-upstream }
      - { pool: eu-dead, upstreamModel: claude-int-upstream }
      - { pool: eu-unkeyed, upstreamModel: claude-int-upstream }
      - { pool: uk-primary, upstreamModel: claude-int-upstream }
plans:
  - id: int
    residency: [eu, uk]
    models: all
    limits: { requestsPerMinute: 100, concurrency: 10, monthlyTokens: 1000000 }
    overage: { enabled: false, gbpPerMtok: 0 }
`;
}

async function startRouter(configPath: string): Promise<string> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GATEWAY_CONFIG: configPath,
    GRPC_PORT: '0',
    GRPC_INSECURE: 'true',
    METRICS_PORT: '0',
    LOG_LEVEL: 'info',
    ROUTER_INT_UPSTREAM_KEY: upstreamKey,
  };
  delete env.ROUTER_INT_UNSET_KEY;
  const started = await spawnRouter(env);
  router = started.process;
  routerLogs = started.logs;
  return started.address;
}

beforeAll(async () => {
  sim = await startSimUpstream({ host: '127.0.0.1', port: 0, apiKey: upstreamKey });
  configDir = await mkdtemp(join(tmpdir(), 'router-int-'));
  const configPath = join(configDir, 'gateway.yaml');
  await writeFile(configPath, gatewayYaml(sim.url, await refusedUrl()));
  const address = await startRouter(configPath);
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
  await sim?.close();
  if (configDir) await rm(configDir, { recursive: true, force: true });
});

beforeEach(() => fetch(`${sim.url}/_sim/requests`, { method: 'DELETE' }));

async function simRequests(): Promise<RecordedRequest[]> {
  return (await (await fetch(`${sim.url}/_sim/requests`)).json()) as RecordedRequest[];
}

type CompleteRequestInit = MessageInitShape<typeof routerv1.CompleteRequestSchema>;

function completeRequest(
  text: string,
  options: {
    stream?: boolean;
    pools?: string[];
    environment?: commonv1.Environment;
    residency?: commonv1.Residency;
  } = {},
): CompleteRequestInit & { body: Record<string, unknown> } {
  const stream = options.stream ?? false;
  const body = {
    model: 'claude-int',
    max_tokens: 256,
    system: 'You are a test.',
    messages: [{ role: 'user', content: text }],
    ...(stream ? { stream: true } : {}),
  };
  return {
    body,
    requestId: `req_int${Math.random().toString(36).slice(2, 12)}`,
    key: {
      keyId: 'key_int',
      accountId: 'acct_int',
      environment: options.environment ?? commonv1.Environment.LIVE,
      residency: options.residency ?? commonv1.Residency.EU,
    },
    model: 'claude-int',
    pools: (options.pools ?? ['eu-primary']).map((poolId) => ({ poolId, upstreamModel: 'claude-int-upstream' })),
    bodyJson: Buffer.from(JSON.stringify(body)),
    stream,
    headers: { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'token-efficient-tools-2025-02-19' },
  };
}

async function complete(
  request: CompleteRequestInit,
  signal?: AbortSignal,
): Promise<Result<routerv1.CompleteResponse>[]> {
  const items: Result<routerv1.CompleteResponse>[] = [];
  for await (const item of client.complete(request, { signal })) items.push(item);
  return items;
}

function kinds(items: Result<routerv1.CompleteResponse>[]): string[] {
  return items.map((item) => {
    if (!item.ok) return `error:${item.error.type}`;
    const { event } = item.value;
    return event.case === 'sse' ? event.value.event : (event.case ?? 'empty');
  });
}

function sseData(items: Result<routerv1.CompleteResponse>[], name: string): { [field: string]: unknown }[] {
  return items.flatMap((item) =>
    item.ok && item.value.event.case === 'sse' && item.value.event.value.event === name
      ? [JSON.parse(Buffer.from(item.value.event.value.data).toString()) as { [field: string]: unknown }]
      : [],
  );
}

function finishedUsage(items: Result<routerv1.CompleteResponse>[]) {
  const last = items.at(-1);
  if (!last?.ok || last.value.event.case !== 'finished') throw new Error(`no Finished: ${kinds(items).join(',')}`);
  const usage = last.value.event.value.usage!;
  return { input: Number(usage.inputTokens), output: Number(usage.outputTokens) };
}

describe('router over gRPC', () => {
  it('relays a streamed live completion verbatim, after Started, with usage in Finished', async () => {
    const text = `Hello ${promptMarker}, please echo this back.`;
    const request = completeRequest(text, { stream: true });
    const items = await complete(request);
    expect(kinds(items)).toEqual([
      'started',
      'message_start',
      'content_block_start',
      'ping',
      ...Array<string>(echoChunks(text).length).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
      'finished',
    ]);
    const started = items[0]!;
    expect(started.ok && started.value.event.case === 'started' && started.value.event.value).toMatchObject({
      poolId: 'eu-primary',
      region: 'eu-west',
    });
    const echoed = sseData(items, 'content_block_delta')
      .map((data) => (data.delta as { text: string }).text)
      .join('');
    expect(echoed).toBe(text);
    expect(finishedUsage(items)).toEqual({ input: estimateInputTokens(request.body), output: echoChunks(text).length });
    expect(sseData(items, 'message_start')[0]!.message).toMatchObject({ model: 'claude-int' });

    const [upstream] = await simRequests();
    expect(upstream!.body).toEqual({ ...request.body, model: 'claude-int-upstream' });
    expect(upstream!.headers['anthropic-version']).toBe('2023-06-01');
    expect(upstream!.headers['anthropic-beta']).toBe('token-efficient-tools-2025-02-19');
  });

  it('relays a non-streamed live completion as one Message', async () => {
    const text = `Plain ${promptMarker} answer please`;
    const request = completeRequest(text);
    const items = await complete(request);
    expect(kinds(items)).toEqual(['started', 'message', 'finished']);
    const message = items[1]!;
    const json =
      message.ok && message.value.event.case === 'message' ? message.value.event.value.json : new Uint8Array();
    expect(JSON.parse(Buffer.from(json).toString())).toMatchObject({
      type: 'message',
      // The alias the caller asked for; the upstream was asked for claude-int-upstream.
      model: 'claude-int',
      content: [{ type: 'text', text }],
      stop_reason: 'end_turn',
    });
    expect(finishedUsage(items)).toEqual({ input: estimateInputTokens(request.body), output: echoChunks(text).length });
  });

  it('answers test keys from the stub without touching an upstream', async () => {
    const request = completeRequest(`Stub ${promptMarker} please`, {
      stream: true,
      environment: commonv1.Environment.TEST,
    });
    const first = await complete(request);
    const second = await complete(request);
    expect(kinds(first)[0]).toBe('started');
    expect(kinds(first).slice(1, 4)).toEqual(['message_start', 'content_block_start', 'ping']);
    expect(kinds(first).slice(-4)).toEqual(['content_block_stop', 'message_delta', 'message_stop', 'finished']);
    expect(sseData(second, 'content_block_delta')).toEqual(sseData(first, 'content_block_delta'));
    expect(finishedUsage(first).output).toBe(sseData(first, 'content_block_delta').length);

    const refused = await complete(
      completeRequest('gw-test:error:rate_limit_error', { environment: commonv1.Environment.TEST }),
    );
    expect(refused).toEqual([
      { ok: false, error: expect.objectContaining({ type: 'rate_limit_error', retryAfterMs: 1000 }) },
    ]);
    expect(await simRequests()).toEqual([]);
  });

  it('fails over to the next endpoint and pool before the first byte, never outside the candidates', async () => {
    const items = await complete(completeRequest(`Failover ${promptMarker}`, { pools: ['eu-dead', 'eu-primary'] }));
    expect(kinds(items)).toEqual(['started', 'message', 'finished']);
    const started = items[0]!;
    expect(started.ok && started.value.event.case === 'started' && started.value.event.value.poolId).toBe('eu-primary');
    expect(await simRequests()).toHaveLength(1);

    const onlyDead = await complete(completeRequest(`Nowhere ${promptMarker}`, { pools: ['eu-dead'] }));
    expect(kinds(onlyDead)).toEqual(['error:api_error']);
    expect(await simRequests()).toHaveLength(1);
  });

  it('never crosses the key residency', async () => {
    const items = await complete(completeRequest(`Residency ${promptMarker}`, { pools: ['uk-primary'] }));
    expect(kinds(items)).toEqual(['error:residency_unavailable']);
    expect(await simRequests()).toEqual([]);
  });

  it('turns an upstream 400 into invalid_request_error carrying its message, without failing over', async () => {
    const items = await complete(completeRequest('sim:error=400', { stream: true }));
    expect(items).toEqual([
      {
        ok: false,
        error: expect.objectContaining({ type: 'invalid_request_error', message: 'sim: error status 400 on request' }),
      },
    ]);
    expect(await simRequests()).toHaveLength(1);
  });

  it('turns saturation everywhere into overloaded_error with a wait', async () => {
    const items = await complete(completeRequest('sim:error=529 sim:retry-after=2'));
    expect(items).toEqual([
      { ok: false, error: expect.objectContaining({ type: 'overloaded_error', retryAfterMs: 2000 }) },
    ]);
  });

  it('says a credential is not configured when the pool credential env var is unset', async () => {
    const items = await complete(completeRequest(`Unkeyed ${promptMarker}`, { pools: ['eu-unkeyed'] }));
    expect(items).toEqual([
      {
        ok: false,
        error: expect.objectContaining({ type: 'overloaded_error', message: expect.stringContaining('credential') }),
      },
    ]);
    expect(await simRequests()).toEqual([]);
  });

  it('ends with an error after Started when the upstream fails mid-stream', async () => {
    const items = await complete(completeRequest('one two three four sim:stream-error-after=2', { stream: true }));
    expect(kinds(items)).toEqual([
      'started',
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'error:overloaded_error',
    ]);
  });

  /** Polls the simulator until its last request is no longer in progress; the outcome and how long it took. */
  async function upstreamOutcome(since: number): Promise<{ outcome: string | undefined; afterMs: number }> {
    const outcome = await waitUntil(
      async () => (await simRequests()).at(-1)?.outcome,
      { what: "the upstream request's end", timeoutMs: 5000 - (Date.now() - since), intervalMs: 10 },
      (seen) => seen !== undefined && seen !== 'in_progress',
    );
    return { outcome, afterMs: Date.now() - since };
  }

  it('closes the upstream request at once when the caller cancels mid-stream', async () => {
    // Deltas 1.5 s apart: a close that waited for the next upstream event would come far too late.
    const controller = new AbortController();
    let cancelledAt = 0;
    for await (const item of client.complete(completeRequest('sim:pace=1500 one two three four', { stream: true }), {
      signal: controller.signal,
    })) {
      if (kinds([item])[0] === 'content_block_delta') {
        cancelledAt = Date.now();
        controller.abort();
        break;
      }
    }
    expect(cancelledAt).toBeGreaterThan(0);
    const { outcome, afterMs } = await upstreamOutcome(cancelledAt);
    expect(outcome).toBe('client_closed');
    expect(afterMs).toBeLessThan(750);
  });

  it('closes the upstream request at once when the caller cancels before the first byte', async () => {
    const controller = new AbortController();
    const call = complete(completeRequest('sim:latency=5000 slow to answer'), controller.signal);
    await waitUntil(async () => (await simRequests()).at(-1)?.outcome === 'in_progress', {
      what: 'the upstream to hold the request',
    });
    const cancelledAt = Date.now();
    controller.abort();
    expect(kinds(await call)).not.toContain('started');
    const { outcome, afterMs } = await upstreamOutcome(cancelledAt);
    expect(outcome).toBe('client_closed');
    expect(afterMs).toBeLessThan(750);
  });

  type CountTokensRequestInit = MessageInitShape<typeof routerv1.CountTokensRequestSchema>;

  function countRequest(
    text: string,
    options: {
      pools?: string[];
      environment?: commonv1.Environment;
      residency?: commonv1.Residency;
      extra?: Record<string, unknown>;
    } = {},
  ): CountTokensRequestInit & { body: Record<string, unknown> } {
    const { requestId, key, model, pools, headers } = completeRequest(text, options);
    const body = {
      model: 'claude-int',
      system: [{ type: 'text', text: 'You are a test.' }],
      messages: [
        { role: 'user', content: `Weather ${promptMarker}?` },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Oslo' } }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'Sunny' },
            { type: 'text', text },
          ],
        },
      ],
      tools: [{ name: 'weather', description: 'Looks it up.', input_schema: { type: 'object' } }],
      ...options.extra,
    };
    return { requestId, key, model, pools, headers, body, bodyJson: Buffer.from(JSON.stringify(body)) };
  }

  it('counts tokens for a live key at the upstream, failing over from a refusing endpoint', async () => {
    // eu-primary's first endpoint refuses connections; its second is the simulator.
    const request = countRequest(`Count ${promptMarker} please`);
    const counted = await client.countTokens(request);
    expect(counted).toEqual({
      ok: true,
      value: expect.objectContaining({ estimated: false, poolId: 'eu-primary', region: 'eu-west' }),
    });
    expect(counted.ok && Number(counted.value.inputTokens)).toBe(estimateInputTokens(request.body));

    const [upstream, ...others] = await simRequests();
    expect(others).toEqual([]);
    expect(upstream).toMatchObject({
      method: 'POST',
      path: '/v1/messages/count_tokens',
      outcome: 'completed',
      body: { ...request.body, model: 'claude-int-upstream' },
    });
    expect(upstream!.headers['anthropic-version']).toBe('2023-06-01');
    expect(upstream!.headers['anthropic-beta']).toBe('token-efficient-tools-2025-02-19');
  });

  it('fails over to the next candidate pool for a count, never outside the candidates', async () => {
    const counted = await client.countTokens(
      countRequest(`Failover ${promptMarker}`, { pools: ['eu-dead', 'eu-primary'] }),
    );
    expect(counted.ok && counted.value.poolId).toBe('eu-primary');
    expect(await simRequests()).toHaveLength(1);

    const nowhere = await client.countTokens(countRequest(`Nowhere ${promptMarker}`, { pools: ['eu-dead'] }));
    expect(nowhere).toEqual({ ok: false, error: expect.objectContaining({ type: 'api_error' }) });
    expect(await simRequests()).toHaveLength(1);
  });

  it('answers the estimate for a test key without any upstream request', async () => {
    const request = countRequest(`Test ${promptMarker}`, { environment: commonv1.Environment.TEST });
    const counted = await client.countTokens(request);
    expect(counted).toEqual({
      ok: true,
      value: expect.objectContaining({ estimated: true, poolId: '', region: '' }),
    });
    expect(counted.ok && Number(counted.value.inputTokens)).toBe(estimateInputTokens(request.body));
    expect(await simRequests()).toEqual([]);
  });

  it('maps an upstream 400 on a count to invalid_request_error with its message, without failing over', async () => {
    const directed = await client.countTokens(countRequest('sim:error=400'));
    expect(directed).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'invalid_request_error', message: 'sim: error status 400 on request' }),
    });
    // The upstream's own validation: count_tokens takes no max_tokens.
    const leaked = await client.countTokens(countRequest(`Leak ${promptMarker}`, { extra: { max_tokens: 10 } }));
    expect(leaked).toEqual({
      ok: false,
      error: expect.objectContaining({
        type: 'invalid_request_error',
        message: 'max_tokens: Extra inputs are not permitted',
      }),
    });
    expect(await simRequests()).toHaveLength(2);
  });

  it('keeps counts inside the key residency and maps saturation like Complete', async () => {
    const elsewhere = await client.countTokens(countRequest(`Residency ${promptMarker}`, { pools: ['uk-primary'] }));
    expect(elsewhere).toEqual({ ok: false, error: expect.objectContaining({ type: 'residency_unavailable' }) });
    expect(await simRequests()).toEqual([]);

    const saturated = await client.countTokens(countRequest('sim:error=529 sim:retry-after=2'));
    expect(saturated).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'overloaded_error', retryAfterMs: 2000 }),
    });
  });

  it('logs one count_tokens line per call, with ids and counts', async () => {
    const countLines = () =>
      routerLogs
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((entry) => entry.msg === 'count_tokens ended');
    // The router's stdout may still be on its way after the last reply: 8 calls above, 8 lines.
    const lines = await waitUntil(
      countLines,
      { what: '8 log lines', timeoutMs: 2000, intervalMs: 10 },
      (seen) => seen.length >= 8,
    );
    expect(lines).toHaveLength(8);
    expect(lines).toContainEqual(
      expect.objectContaining({
        request_id: expect.stringMatching(/^req_int/),
        environment: 'live',
        model: 'claude-int',
        pool_id: 'eu-primary',
        region: 'eu-west',
        outcome: 'ok',
        estimated: false,
        input_tokens: expect.any(Number),
        duration_ms: expect.any(Number),
      }),
    );
    expect(lines).toContainEqual(expect.objectContaining({ environment: 'test', estimated: true, outcome: 'ok' }));
    expect(lines).toContainEqual(expect.objectContaining({ outcome: 'residency_unavailable' }));
  });

  it('never logs a prompt or a completion', () => {
    expect(routerLogs.length).toBeGreaterThan(0);
    expect(routerLogs.join('\n')).not.toContain(promptMarker);
    expect(routerLogs.join('\n')).not.toContain(upstreamKey);
  });
});
