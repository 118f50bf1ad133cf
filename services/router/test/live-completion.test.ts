import { parseGatewayConfig } from '@gw/config';
import { err, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { createAdapterRegistry } from '../src/adapters';
import type { CompletionEvent, CompletionRequest } from '../src/completion';
import { completeLive } from '../src/live-completion';
import type { LiveCompletionDeps } from '../src/live-completion';
import { createPoolDirectory } from '../src/pools';
import { errorOfFailures, failureOfStatus, retryAfterMsOf } from '../src/upstream-errors';
import type { UpstreamHttp } from '../src/upstream-http';
import { fakeHttp, noMetrics, silentLogger } from './fakes';
import type { Answer } from './fakes';

const config = parseGatewayConfig(`
regions:
  - { id: eu-west, jurisdiction: eu }
  - { id: eu-north, jurisdiction: eu }
  - { id: uk-south, jurisdiction: uk }
pools:
  - { id: eu-a, region: eu-west, adapter: anthropic, endpoints: [{ url: 'http://a1.test' }, { url: 'http://a2.test/' }] }
  - { id: eu-b, region: eu-north, adapter: anthropic, endpoints: [{ url: 'http://b1.test' }], credentialEnv: EU_B_KEY }
  - { id: uk-a, region: uk-south, adapter: anthropic, endpoints: [{ url: 'http://uk1.test' }] }
models:
  - alias: m
    displayName: M
    createdAt: '2025-01-01T00:00:00Z'
    pricing: { inputGbpPerMtok: 1, outputGbpPerMtok: 1 }
    servedBy: [{ pool: eu-a, upstreamModel: m-a }, { pool: eu-b, upstreamModel: m-b }, { pool: uk-a, upstreamModel: m-uk }]
plans:
  - id: p
    residency: [eu, uk]
    models: all
    limits: { requestsPerMinute: 1, concurrency: 1, monthlyTokens: 1 }
    overage: { enabled: false, gbpPerMtok: 0 }
`);

const messageJson = '{"type":"message","content":[],"usage":{"input_tokens":2,"output_tokens":1}}';
const okAnswer: Answer = { status: 200, headers: { 'content-type': 'application/json' }, body: messageJson };

function deps(http: UpstreamHttp, env: Record<string, string> = { EU_B_KEY: 'sk-b' }): LiveCompletionDeps {
  return {
    pools: createPoolDirectory(config),
    adapters: createAdapterRegistry(),
    http,
    credential: (name) => env[name],
    logger: silentLogger,
    metrics: noMetrics,
  };
}

function request(candidates: [string, string][], residency: 'eu' | 'uk' = 'eu'): CompletionRequest {
  return {
    requestId: 'req_live',
    accountId: 'account-1',
    environment: 'live',
    residency,
    model: 'm',
    candidates: candidates.map(([poolId, upstreamModel]) => ({ poolId, upstreamModel })),
    body: Buffer.from(JSON.stringify({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] })),
    stream: false,
    headers: {},
    query: '',
  };
}

async function run(
  completion: CompletionRequest,
  dependencies: LiveCompletionDeps,
  signal = new AbortController().signal,
) {
  const items: Result<CompletionEvent>[] = [];
  for await (const item of completeLive(completion, signal, dependencies)) items.push(item);
  return items;
}

const bothEu: [string, string][] = [
  ['eu-a', 'm-a'],
  ['eu-b', 'm-b'],
];

describe('live completion', () => {
  it('uses the first candidate when it answers, and says where in Started', async () => {
    const upstream = fakeHttp({ 'a1.test': okAnswer });
    const items = await run(request(bothEu), deps(upstream.http));
    expect(upstream.hosts()).toEqual(['a1.test']);
    expect(items.map((item) => item.ok && item.value.kind)).toEqual(['started', 'message', 'finished']);
    expect(items[0]).toEqual(ok({ kind: 'started', poolId: 'eu-a', region: 'eu-west' }));
    expect(JSON.parse(String(upstream.sent[0]!.body)).model).toBe('m-a');
  });

  it('moves on through endpoints and pools in order on connect errors, 5xx, 429 and 529', async () => {
    const upstream = fakeHttp({ 'a2.test': { status: 529 }, 'b1.test': okAnswer });
    const items = await run(request(bothEu), deps(upstream.http));
    expect(upstream.hosts()).toEqual(['a1.test', 'a2.test', 'b1.test']);
    expect(items[0]).toEqual(ok({ kind: 'started', poolId: 'eu-b', region: 'eu-north' }));
    expect(upstream.sent[2]!.headers['x-api-key']).toBe('sk-b');
    expect(JSON.parse(String(upstream.sent[2]!.body)).model).toBe('m-b');
  });

  it('never uses a pool the request did not name, nor one outside the key residency', async () => {
    const upstream = fakeHttp({
      'a1.test': { status: 500 },
      'a2.test': { status: 500 },
      'b1.test': okAnswer,
      'uk1.test': okAnswer,
    });
    const items = await run(
      request([
        ['eu-a', 'm-a'],
        ['uk-a', 'm-uk'],
      ]),
      deps(upstream.http),
    );
    expect(upstream.hosts()).toEqual(['a1.test', 'a2.test']);
    expect(items).toEqual([err(expect.objectContaining({ type: 'api_error' }))]);
  });

  it('refuses with residency_unavailable when no candidate is inside the tier', async () => {
    const upstream = fakeHttp({});
    expect(await run(request([['uk-a', 'm-uk']]), deps(upstream.http))).toEqual([
      err(expect.objectContaining({ type: 'residency_unavailable' })),
    ]);
    expect(await run(request([]), deps(upstream.http))).toEqual([
      err(expect.objectContaining({ type: 'residency_unavailable' })),
    ]);
    expect(await run({ ...request(bothEu), residency: undefined }, deps(upstream.http))).toEqual([
      err(expect.objectContaining({ type: 'residency_unavailable' })),
    ]);
    expect(upstream.sent).toHaveLength(0);
  });

  it('returns an upstream 400 as invalid_request_error with its message, without failing over', async () => {
    const rejection = '{"type":"error","error":{"type":"invalid_request_error","message":"temperature: out of range"}}';
    const upstream = fakeHttp({ 'a1.test': { status: 400, body: rejection }, 'b1.test': okAnswer });
    const items = await run(request(bothEu), deps(upstream.http));
    expect(upstream.hosts()).toEqual(['a1.test']);
    expect(items).toEqual([err({ type: 'invalid_request_error', message: 'temperature: out of range' })]);
  });

  it('gives overloaded_error with a wait when every candidate is saturated', async () => {
    const upstream = fakeHttp({
      'a1.test': { status: 429, headers: { 'retry-after': '3' } },
      'a2.test': { status: 503 },
      'b1.test': { status: 529, headers: { 'retry-after-ms': '1500' } },
    });
    const items = await run(request(bothEu), deps(upstream.http));
    expect(items).toEqual([err(expect.objectContaining({ type: 'overloaded_error', retryAfterMs: 1500 }))]);
  });

  it('skips a pool whose credential env var is unset, and says a credential is not configured', async () => {
    const upstream = fakeHttp({ 'b1.test': okAnswer });
    const items = await run(request([['eu-b', 'm-b']]), deps(upstream.http, {}));
    expect(upstream.sent).toHaveLength(0);
    expect(items).toEqual([
      err(expect.objectContaining({ type: 'overloaded_error', message: expect.stringContaining('credential') })),
    ]);
  });

  it('hides an upstream 401 behind overloaded_error', async () => {
    const refusal = '{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}';
    const upstream = fakeHttp({ 'b1.test': { status: 401, body: refusal } });
    const [item] = await run(request([['eu-b', 'm-b']]), deps(upstream.http));
    expect(item).toMatchObject({ ok: false, error: { type: 'overloaded_error' } });
    expect(!item!.ok && item!.error.message).not.toContain('x-api-key');
  });

  it('fails over after a headers timeout: nothing reached the caller yet', async () => {
    const upstream = fakeHttp({ 'a1.test': { kind: 'timeout', code: 'UND_ERR_HEADERS_TIMEOUT' }, 'a2.test': okAnswer });
    const items = await run(request(bothEu), deps(upstream.http));
    expect(upstream.hosts()).toEqual(['a1.test', 'a2.test']);
    expect(items[0]).toEqual(ok({ kind: 'started', poolId: 'eu-a', region: 'eu-west' }));
  });

  it('says the model service did not answer in time only when every attempt timed out', async () => {
    const timeout: Answer = { kind: 'timeout', code: 'UND_ERR_HEADERS_TIMEOUT' };
    const allSlow = fakeHttp({ 'a1.test': timeout, 'a2.test': timeout, 'b1.test': timeout });
    expect(await run(request(bothEu), deps(allSlow.http))).toEqual([
      err(expect.objectContaining({ type: 'api_error', message: expect.stringContaining('in time') })),
    ]);
    expect(allSlow.hosts()).toEqual(['a1.test', 'a2.test', 'b1.test']);
    const slowThenBusy = fakeHttp({ 'a1.test': timeout, 'a2.test': timeout, 'b1.test': { status: 529 } });
    expect(await run(request(bothEu), deps(slowThenBusy.http))).toEqual([
      err(expect.objectContaining({ type: 'overloaded_error' })),
    ]);
  });

  it('treats a 200 of the wrong content type as a failed endpoint', async () => {
    const upstream = fakeHttp({
      'a1.test': { status: 200, headers: { 'content-type': 'text/html' } },
      'a2.test': okAnswer,
    });
    const items = await run(request(bothEu), deps(upstream.http));
    expect(upstream.hosts()).toEqual(['a1.test', 'a2.test']);
    expect(items[0]).toEqual(ok({ kind: 'started', poolId: 'eu-a', region: 'eu-west' }));
  });

  it('ends without an error when the caller cancelled', async () => {
    const controller = new AbortController();
    controller.abort();
    const upstream = fakeHttp({ 'a1.test': { kind: 'cancelled', code: 'ABORTED' } });
    expect(await run(request(bothEu), deps(upstream.http), controller.signal)).toEqual([]);
  });
});

describe('upstream error mapping', () => {
  it('maps statuses to attempt failures', () => {
    expect(failureOfStatus(422, {}, 'bad')).toEqual({ kind: 'rejected', status: 422, message: 'bad' });
    expect(failureOfStatus(403, {}, 'no')).toEqual({ kind: 'credential', status: 403 });
    expect(failureOfStatus(529, { 'retry-after': '2' }, undefined)).toEqual({
      kind: 'busy',
      status: 529,
      retryAfterMs: 2000,
    });
    expect(failureOfStatus(502, {}, undefined)).toEqual({ kind: 'failed', status: 502 });
  });

  it('reads retry hints, bounded to a minute', () => {
    expect(retryAfterMsOf({ 'retry-after-ms': '250.4' })).toBe(250);
    expect(retryAfterMsOf({ 'retry-after': '3600' })).toBe(60_000);
    expect(retryAfterMsOf({ 'retry-after': new Date(Date.now() + 5_000).toUTCString() })).toBeGreaterThan(3_000);
    expect(retryAfterMsOf({})).toBeUndefined();
  });

  it('prefers saturation over a missing credential over other failures', () => {
    expect(errorOfFailures([{ kind: 'unreachable', code: 'ECONNREFUSED' }])).toMatchObject({ type: 'api_error' });
    expect(errorOfFailures([{ kind: 'credential' }, { kind: 'failed', status: 500 }])).toMatchObject({
      type: 'overloaded_error',
      message: expect.stringContaining('credential'),
    });
    expect(errorOfFailures([{ kind: 'credential' }, { kind: 'busy', status: 529 }])).toEqual({
      type: 'overloaded_error',
      message: expect.stringContaining('overloaded'),
      retryAfterMs: 1000,
    });
    expect(errorOfFailures([{ kind: 'rejected', status: 413 }])).toMatchObject({ type: 'request_too_large' });
  });
});
