import fc from 'fast-check';
import { gatewayConfigSchema } from '@gw/config';
import type { Jurisdiction } from '@gw/config';
import { createAdapterRegistry } from '../src/adapters';
import { createAnthropicAdapter } from '../src/adapters/anthropic';
import type { AdapterRegistry } from '../src/adapters';
import { createEndpointBalancer } from '../src/balancer';
import { createPoolDirectory } from '../src/pools';
import { BodyBudget } from '@gw/workers';
import { createRouter } from '../src/router';
import { defaultTestStubOptions, planStubAnswer } from '../src/test-stub';
import type { UpstreamHttpRequest } from '../src/upstream-http';
import { fakeHttp, noMetrics, silentLogger } from './fakes';
import type { Answer } from './fakes';

/**
 * Residency as a property: whatever the pools, their health, the key and the candidates policy
 * sends (even wrong ones), the router never makes an attempt against a pool outside the key's
 * jurisdiction. The real router runs (createRouter → completion or count → failover loop → route
 * planning → balancer → adapters); only the HTTP layer under the adapters is fake. Each scenario
 * sends its call three times through one balancer that ejects an endpoint at its first failure, so
 * that ejected endpoints, and the last resort of trying them when every one is ejected, come up.
 */

type Health =
  | { kind: 'up' }
  | { kind: 'refused' }
  | { kind: 'reset' }
  | { kind: 'status'; status: number }
  | { kind: 'slow'; delayMs: number; then: 'up' | 'timeout' };

interface PoolSpec {
  jurisdiction: Jurisdiction;
  endpoints: Health[];
  credential: 'set' | 'unset' | 'none';
}

interface Scenario {
  pools: PoolSpec[];
  residency: Jurisdiction;
  /** Pool indexes (modulo the pool count), or -1 for a pool the router does not know. */
  candidates: { pool: number; upstreamModel: string }[];
  call: 'stream' | 'message' | 'count';
  adapterCounts: boolean;
}

const health: fc.Arbitrary<Health> = fc.oneof(
  fc.constant<Health>({ kind: 'up' }),
  fc.constant<Health>({ kind: 'refused' }),
  fc.constant<Health>({ kind: 'reset' }),
  fc.constantFrom(500, 502, 503, 504, 529, 429).map<Health>((status) => ({ kind: 'status', status })),
  fc
    .record({ delayMs: fc.integer({ min: 1, max: 3 }), then: fc.constantFrom<'up' | 'timeout'>('up', 'timeout') })
    .map<Health>((slow) => ({ kind: 'slow', ...slow })),
);

const scenario: fc.Arbitrary<Scenario> = fc.record({
  pools: fc.array(
    fc.record({
      jurisdiction: fc.constantFrom<Jurisdiction>('uk', 'eu'),
      endpoints: fc.array(health, { minLength: 1, maxLength: 3 }),
      credential: fc.constantFrom<PoolSpec['credential']>('set', 'set', 'unset', 'none'),
    }),
    { minLength: 1, maxLength: 6 },
  ),
  residency: fc.constantFrom<Jurisdiction>('uk', 'eu'),
  candidates: fc.array(
    fc.record({
      pool: fc.integer({ min: -1, max: 5 }),
      upstreamModel: fc.constantFrom('m-up', 'm-up', 'm-up', ''),
    }),
    { maxLength: 8 },
  ),
  call: fc.constantFrom<Scenario['call']>('stream', 'message', 'count'),
  adapterCounts: fc.boolean(),
});

const regionOf: Record<Jurisdiction, string> = { uk: 'uk-south', eu: 'eu-west' };
const poolId = (index: number) => `p${index}`;
const host = (pool: number, endpoint: number) => `p${pool}-e${endpoint}.test`;

function gatewayConfig(pools: PoolSpec[]) {
  return gatewayConfigSchema.parse({
    regions: [
      { id: 'uk-south', jurisdiction: 'uk' },
      { id: 'eu-west', jurisdiction: 'eu' },
    ],
    pools: pools.map((pool, index) => ({
      id: poolId(index),
      region: regionOf[pool.jurisdiction],
      adapter: 'anthropic',
      endpoints: pool.endpoints.map((_, endpoint) => ({ url: `http://${host(index, endpoint)}` })),
      ...(pool.credential === 'none' ? {} : { credentialEnv: `KEY_${index}_${pool.credential.toUpperCase()}` }),
    })),
    models: [
      {
        alias: 'm',
        displayName: 'M',
        createdAt: '2025-01-01T00:00:00Z',
        pricing: { inputGbpPerMtok: 1, outputGbpPerMtok: 1 },
        servedBy: pools.map((_, index) => ({ pool: poolId(index), upstreamModel: 'm-up' })),
      },
    ],
    plans: [
      {
        id: 'p',
        residency: ['uk', 'eu'],
        models: 'all',
        limits: { requestsPerMinute: 1, concurrency: 1, monthlyTokens: 1 },
        overage: { enabled: false, gbpPerMtok: 0 },
      },
    ],
  });
}

const sse = [
  'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":1}}}\n\n',
  'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":2}}\n\n',
  'event: message_stop\ndata: {"type":"message_stop"}\n\n',
].join('');

/** A healthy upstream's answer to whatever was asked. */
function healthyAnswer(request: UpstreamHttpRequest): Answer {
  if (request.url.endsWith('/v1/messages/count_tokens')) {
    return { status: 200, headers: { 'content-type': 'application/json' }, body: '{"input_tokens":9}' };
  }
  if (request.headers.accept === 'text/event-stream') {
    return { status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse };
  }
  return {
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: '{"type":"message","content":[],"usage":{"input_tokens":3,"output_tokens":2}}',
  };
}

function answerOf(spec: Health, request: UpstreamHttpRequest): Answer {
  switch (spec.kind) {
    case 'up':
      return healthyAnswer(request);
    case 'refused':
      return { kind: 'connect', code: 'ECONNREFUSED' };
    case 'reset':
      return { kind: 'reset', code: 'ECONNRESET' };
    case 'status':
      return { status: spec.status, headers: { 'content-type': 'application/json' }, body: '{"type":"error"}' };
    case 'slow':
      return spec.then === 'up'
        ? { ...healthyAnswer(request), delayMs: spec.delayMs }
        : { kind: 'timeout', code: 'UND_ERR_HEADERS_TIMEOUT', delayMs: spec.delayMs };
  }
}

/** Calls through one router (and balancer) per scenario. */
const callsPerScenario = 3;

/** Runs the scenario's call through the real router; per call, the pool that answered, if any, and the error type otherwise. */
async function run(subject: Scenario) {
  const endpoints = new Map<string, { pool: number; health: Health }>();
  subject.pools.forEach((pool, index) =>
    pool.endpoints.forEach((spec, endpoint) => endpoints.set(host(index, endpoint), { pool: index, health: spec })),
  );
  const upstream = fakeHttp((request) => {
    const endpoint = endpoints.get(new URL(request.url).host);
    if (endpoint === undefined) throw new Error(`request to an endpoint no pool has: ${request.url}`);
    return answerOf(endpoint.health, request);
  });
  const adapters: AdapterRegistry = subject.adapterCounts
    ? createAdapterRegistry()
    : { ...createAdapterRegistry(), anthropic: { ...createAnthropicAdapter(), countTokens: undefined } };
  const pools = createPoolDirectory(gatewayConfig(subject.pools));
  const router = createRouter({
    pools,
    adapters,
    http: upstream.http,
    credential: (name) => (name.endsWith('_SET') ? 'sk-test' : undefined),
    logger: silentLogger,
    metrics: noMetrics,
    balancer: createEndpointBalancer(pools, {
      settings: { failureThreshold: 1, baseEjectionMs: 60_000, maxEjectionMs: 60_000 },
    }),
    testStub: defaultTestStubOptions,
    planStub: (request) => Promise.resolve(planStubAnswer(request.body, request.model)),
    bodies: new BodyBudget(64 * 1024 * 1024),
  });
  const request = {
    requestId: 'req_property',
    accountId: 'account-1',
    environment: 'live' as const,
    residency: subject.residency,
    model: 'm',
    candidates: subject.candidates.map(({ pool, upstreamModel }) => ({
      poolId: pool < 0 ? 'ghost' : poolId(pool % subject.pools.length),
      upstreamModel,
    })),
    body: Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello' }] })),
    headers: {},
    query: '',
  };
  const signal = new AbortController().signal;
  const calls: { answeredBy: string | undefined; errorType: string | undefined }[] = [];
  for (let call = 0; call < callsPerScenario; call += 1) {
    let answeredBy: string | undefined;
    let errorType: string | undefined;
    if (subject.call === 'count') {
      const counted = await router.countTokens(request, signal);
      if (counted.ok) answeredBy = counted.value.poolId || undefined;
      else errorType = counted.error.type;
    } else {
      for await (const item of router.complete({ ...request, stream: subject.call === 'stream' }, signal)) {
        if (!item.ok) errorType = item.error.type;
        else if (item.value.kind === 'started') answeredBy = item.value.poolId;
      }
    }
    calls.push({ answeredBy, errorType });
  }
  const attempted = upstream.sent.map((sent) => endpoints.get(new URL(sent.url).host)!.pool);
  return { attempted, calls, candidates: request.candidates };
}

describe('residency (property)', () => {
  it('never makes an attempt against a pool outside the key jurisdiction', async () => {
    const seen = { foreignCandidateUp: 0, attempts: 0, answered: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(scenario, async (subject) => {
        const { attempted, calls, candidates } = await run(subject);
        const jurisdictionOf = (id: string) => subject.pools[Number(id.slice(1))]?.jurisdiction;
        const inTier = (id: string) => jurisdictionOf(id) === subject.residency;

        // The property: every attempt went to a pool of the key's jurisdiction that policy named.
        for (const pool of attempted) {
          expect(subject.pools[pool]!.jurisdiction).toBe(subject.residency);
          expect(candidates.some((candidate) => candidate.poolId === poolId(pool))).toBe(true);
        }
        for (const { answeredBy } of calls) if (answeredBy !== undefined) expect(inTier(answeredBy)).toBe(true);
        // No candidate inside the tier: refused before any attempt.
        const usable = candidates.filter((candidate) => inTier(candidate.poolId) && candidate.upstreamModel !== '');
        if (usable.length === 0) {
          expect(attempted).toEqual([]);
          for (const { errorType } of calls) expect(['residency_unavailable', 'api_error']).toContain(errorType);
        }

        // How often the dangerous case came up, so that the property is known to be exercised.
        const foreignUp = candidates.some(
          (candidate) =>
            !inTier(candidate.poolId) &&
            jurisdictionOf(candidate.poolId) !== undefined &&
            subject.pools[Number(candidate.poolId.slice(1))]!.endpoints.some((spec) => spec.kind === 'up'),
        );
        if (foreignUp) seen.foreignCandidateUp += 1;
        seen.attempts += attempted.length;
        if (calls[0]!.answeredBy !== undefined) seen.answered += 1;
        if (calls[0]!.errorType === 'residency_unavailable') seen.refused += 1;
      }),
      { numRuns: 300, interruptAfterTimeLimit: 20_000 },
    );
    expect(seen.foreignCandidateUp).toBeGreaterThan(30);
    expect(seen.attempts).toBeGreaterThan(100);
    expect(seen.answered).toBeGreaterThan(10);
    expect(seen.refused).toBeGreaterThan(10);
  }, 30_000);
});
