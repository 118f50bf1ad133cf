import { parseGatewayConfig } from '@gw/config';
import { err, ok } from '@gw/errors';
import { createAdapterRegistry } from '../src/adapters';
import { createAnthropicAdapter } from '../src/adapters/anthropic';
import type { AdapterRegistry } from '../src/adapters';
import type { CountTokensRequest } from '../src/count-tokens';
import { countTokensLive } from '../src/count-tokens';
import { estimateInputTokens } from '@gw/usage';
import type { FailoverDeps } from '../src/failover';
import { createPoolDirectory } from '../src/pools';
import { BodyBudget } from '@gw/workers';
import { createRouter } from '../src/router';
import { defaultTestStubOptions, planStubAnswer } from '../src/test-stub';
import type { UpstreamHttp } from '../src/upstream-http';
import { fakeHttp, noMetrics, recordingLogger, silentLogger } from './fakes';
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

const countOf = (tokens: number): Answer => ({
  status: 200,
  headers: { 'content-type': 'application/json', 'request-id': 'req_up' },
  body: JSON.stringify({ input_tokens: tokens }),
});

const body = {
  model: 'm',
  system: 'Be brief.',
  messages: [{ role: 'user', content: 'How many tokens is this secret-prompt?' }],
  tools: [{ name: 'lookup', input_schema: { type: 'object' } }],
};

function deps(
  http: UpstreamHttp,
  options: { env?: Record<string, string>; adapters?: AdapterRegistry; logger?: FailoverDeps['logger'] } = {},
): FailoverDeps {
  const env = options.env ?? { EU_B_KEY: 'sk-b' };
  return {
    pools: createPoolDirectory(config),
    adapters: options.adapters ?? createAdapterRegistry(),
    http,
    credential: (name) => env[name],
    logger: options.logger ?? silentLogger,
    metrics: noMetrics,
  };
}

function request(
  candidates: [string, string][],
  extra: Partial<CountTokensRequest> = {},
  json: unknown = body,
): CountTokensRequest {
  return {
    requestId: 'req_count',
    accountId: 'account-1',
    environment: 'live',
    residency: 'eu',
    model: 'm',
    candidates: candidates.map(([poolId, upstreamModel]) => ({ poolId, upstreamModel })),
    body: Buffer.from(JSON.stringify(json)),
    headers: { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'token-counting-2024-11-01' },
    query: '',
    ...extra,
  };
}

const bothEu: [string, string][] = [
  ['eu-a', 'm-a'],
  ['eu-b', 'm-b'],
];
const signal = () => new AbortController().signal;
/** The Anthropic adapter as a protocol that has no way to count tokens would be. */
const withoutCounting: AdapterRegistry = {
  ...createAdapterRegistry(),
  anthropic: { ...createAnthropicAdapter(), countTokens: undefined },
};

describe('countTokensLive', () => {
  it("answers the first candidate's count, with its pool and region", async () => {
    const upstream = fakeHttp({ 'a1.test': countOf(42) });
    const counted = await countTokensLive(request(bothEu), signal(), deps(upstream.http));
    expect(counted).toEqual(ok({ inputTokens: 42, estimated: false, poolId: 'eu-a', region: 'eu-west' }));
    expect(upstream.sent.map((sent) => sent.url)).toEqual(['http://a1.test/v1/messages/count_tokens']);
    expect(JSON.parse(String(upstream.sent[0]!.body))).toEqual({ ...body, model: 'm-a' });
    expect(upstream.sent[0]!.headers).toMatchObject({
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'token-counting-2024-11-01',
    });
    // A count is answered at once: the short headers timeout applies.
    expect(upstream.generating).toEqual([false]);
  });

  it('fails over through endpoints and pools like a completion, with the pool credential', async () => {
    const upstream = fakeHttp({ 'a2.test': { status: 529 }, 'b1.test': countOf(7) });
    const counted = await countTokensLive(request(bothEu), signal(), deps(upstream.http));
    expect(upstream.hosts()).toEqual(['a1.test', 'a2.test', 'b1.test']);
    expect(counted).toEqual(ok({ inputTokens: 7, estimated: false, poolId: 'eu-b', region: 'eu-north' }));
    expect(upstream.sent[2]!.headers['x-api-key']).toBe('sk-b');
    expect(JSON.parse(String(upstream.sent[2]!.body)).model).toBe('m-b');
  });

  it('treats a 200 that is not JSON as a failed endpoint', async () => {
    const upstream = fakeHttp({
      'a1.test': { status: 200, headers: { 'content-type': 'text/html' }, body: '<html>' },
      'a2.test': countOf(3),
    });
    const counted = await countTokensLive(request(bothEu), signal(), deps(upstream.http));
    expect(counted).toEqual(ok(expect.objectContaining({ inputTokens: 3, poolId: 'eu-a' })));
  });

  it('maps an upstream 400 to invalid_request_error with its message, without failing over', async () => {
    const rejection = '{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Extra inputs"}}';
    const upstream = fakeHttp({ 'a1.test': { status: 400, body: rejection }, 'b1.test': countOf(1) });
    const counted = await countTokensLive(request(bothEu), signal(), deps(upstream.http));
    expect(upstream.hosts()).toEqual(['a1.test']);
    expect(counted).toEqual(err({ type: 'invalid_request_error', message: 'max_tokens: Extra inputs' }));
  });

  it('gives overloaded_error with the smallest wait when every candidate is saturated', async () => {
    const upstream = fakeHttp({
      'a1.test': { status: 429, headers: { 'retry-after': '3' } },
      'a2.test': { status: 503 },
      'b1.test': { status: 529, headers: { 'retry-after-ms': '1500' } },
    });
    const counted = await countTokensLive(request(bothEu), signal(), deps(upstream.http));
    expect(counted).toEqual(err(expect.objectContaining({ type: 'overloaded_error', retryAfterMs: 1500 })));
  });

  it('never leaves the key residency: residency_unavailable, nothing sent', async () => {
    const upstream = fakeHttp({ 'uk1.test': countOf(1) });
    const counted = await countTokensLive(request([['uk-a', 'm-uk']]), signal(), deps(upstream.http));
    expect(counted).toEqual(err(expect.objectContaining({ type: 'residency_unavailable' })));
    const keyless = await countTokensLive(request(bothEu, { residency: undefined }), signal(), deps(upstream.http));
    expect(keyless).toEqual(err(expect.objectContaining({ type: 'residency_unavailable' })));
    expect(upstream.sent).toHaveLength(0);
  });

  it('skips a pool whose credential is unset', async () => {
    const upstream = fakeHttp({ 'b1.test': countOf(1) });
    const counted = await countTokensLive(request([['eu-b', 'm-b']]), signal(), deps(upstream.http, { env: {} }));
    expect(upstream.sent).toHaveLength(0);
    expect(counted).toEqual(err(expect.objectContaining({ type: 'overloaded_error' })));
  });

  it('answers api_error when the 200 body is not a count', async () => {
    const upstream = fakeHttp({
      'a1.test': { status: 200, headers: { 'content-type': 'application/json' }, body: '{"tokens":3}' },
    });
    const counted = await countTokensLive(request(bothEu), signal(), deps(upstream.http));
    expect(counted).toEqual(err(expect.objectContaining({ type: 'api_error' })));
    expect(upstream.sent).toHaveLength(1);
  });

  it("answers the estimate, without a request, when the pool's adapter cannot count", async () => {
    const upstream = fakeHttp({ 'a1.test': countOf(42) });
    const counted = await countTokensLive(
      request(bothEu),
      signal(),
      deps(upstream.http, { adapters: withoutCounting }),
    );
    expect(counted).toEqual(ok({ inputTokens: estimateInputTokens(body), estimated: true, poolId: '', region: '' }));
    expect(upstream.sent).toHaveLength(0);
  });

  it('still checks residency before answering an estimate', async () => {
    const upstream = fakeHttp({});
    const counted = await countTokensLive(
      request([['uk-a', 'm-uk']]),
      signal(),
      deps(upstream.http, { adapters: withoutCounting }),
    );
    expect(counted).toEqual(err(expect.objectContaining({ type: 'residency_unavailable' })));
  });

  it('refuses a body that is not a JSON object', async () => {
    const upstream = fakeHttp({ 'a1.test': countOf(1) });
    const counted = await countTokensLive(request(bothEu, {}, [1, 2]), signal(), deps(upstream.http));
    expect(counted).toEqual(err(expect.objectContaining({ type: 'invalid_request_error' })));
    expect(upstream.sent).toHaveLength(0);
  });
});

describe('router.countTokens', () => {
  function router(http: UpstreamHttp, logger = recordingLogger(), bodies = new BodyBudget(64 * 1024 * 1024)) {
    return {
      logger,
      router: createRouter({
        ...deps(http, { logger: logger.logger }),
        testStub: defaultTestStubOptions,
        planStub: (request) => Promise.resolve(planStubAnswer(request.body, request.model)),
        bodies,
      }),
    };
  }

  it("holds each call's body until the call ends, and refuses a call whose body would pass the cap with 503", async () => {
    const completion = { ...request(bothEu, { environment: 'test' }), stream: true };
    const size = completion.body.byteLength;
    const bodies = new BodyBudget(size + size / 2);
    const { router: subject } = router(fakeHttp({}).http, recordingLogger(), bodies);
    const first = subject.complete(completion, signal());
    expect((await first.next()).value).toEqual(ok(expect.objectContaining({ kind: 'started' })));
    expect(bodies.heldBytes).toBe(size);

    const refusal = err(expect.objectContaining({ type: 'overloaded_error', retryAfterMs: 5_000 }));
    expect((await subject.complete(completion, signal()).next()).value).toEqual(refusal);
    expect(await subject.countTokens(completion, signal())).toEqual(refusal);

    await first.return(undefined);
    expect(bodies.heldBytes).toBe(0);
    expect((await subject.countTokens(completion, signal())).ok).toBe(true);
    expect(bodies.heldBytes).toBe(0);
  });

  it('gives test keys the estimate and never reaches an upstream', async () => {
    const upstream = fakeHttp({ 'a1.test': countOf(42) });
    const { router: subject } = router(upstream.http);
    const counted = await subject.countTokens(request(bothEu, { environment: 'test' }), signal());
    expect(counted).toEqual(ok({ inputTokens: estimateInputTokens(body), estimated: true, poolId: '', region: '' }));
    // Even outside the residency: test keys have no upstream to protect.
    const elsewhere = await subject.countTokens(request([['uk-a', 'm-uk']], { environment: 'test' }), signal());
    expect(elsewhere.ok).toBe(true);
    expect(upstream.sent).toHaveLength(0);
  });

  it('refuses a test-key body that is not a JSON object', async () => {
    const { router: subject } = router(fakeHttp({}).http);
    const counted = await subject.countTokens(request(bothEu, { environment: 'test' }, 'text'), signal());
    expect(counted).toEqual(err(expect.objectContaining({ type: 'invalid_request_error' })));
  });

  it('logs one line per call, snake_case ids and counts, no content', async () => {
    const { router: subject, logger } = router(fakeHttp({ 'a1.test': countOf(42) }).http);
    await subject.countTokens(request(bothEu), signal());
    await subject.countTokens(request([['uk-a', 'm-uk']]), signal());
    const ended = logger.lines.filter((line) => line.msg === 'count_tokens ended');
    expect(ended.map((line) => line.fields)).toEqual([
      {
        request_id: 'req_count',
        environment: 'live',
        model: 'm',
        pool_id: 'eu-a',
        region: 'eu-west',
        outcome: 'ok',
        estimated: false,
        input_tokens: 42,
        duration_ms: expect.any(Number),
      },
      expect.objectContaining({ outcome: 'residency_unavailable', pool_id: undefined, input_tokens: undefined }),
    ]);
    for (const line of logger.lines) {
      expect(Object.keys(line.fields).every((field) => /^[a-z0-9_]+$/.test(field))).toBe(true);
    }
    expect(JSON.stringify(logger.lines)).not.toContain('secret-prompt');
  });
});
