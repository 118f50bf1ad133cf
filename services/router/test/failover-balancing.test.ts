import { parseGatewayConfig } from '@gw/config';
import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { createAdapterRegistry } from '../src/adapters';
import { createEndpointBalancer } from '../src/balancer';
import type { EndpointBalancer } from '../src/balancer';
import type { CompletionEvent, CompletionRequest } from '../src/completion';
import { completeLive } from '../src/live-completion';
import type { LiveCompletionDeps } from '../src/live-completion';
import { createPoolDirectory } from '../src/pools';
import type { UpstreamHttp } from '../src/upstream-http';
import { fakeHttp, noMetrics, silentLogger } from './fakes';
import type { Answer } from './fakes';

/** The failover loop with a balancer shared across calls, as in the running router. */

const config = parseGatewayConfig(`
regions:
  - { id: eu-west, jurisdiction: eu }
  - { id: eu-north, jurisdiction: eu }
  - { id: uk-south, jurisdiction: uk }
pools:
  - { id: eu-a, region: eu-west, adapter: anthropic, endpoints: [{ url: 'http://a1.test' }, { url: 'http://a2.test' }] }
  - { id: eu-b, region: eu-north, adapter: anthropic, endpoints: [{ url: 'http://b1.test' }] }
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

const pools = createPoolDirectory(config);
const messageJson = '{"type":"message","content":[],"usage":{"input_tokens":2,"output_tokens":1}}';
const okAnswer: Answer = { status: 200, headers: { 'content-type': 'application/json' }, body: messageJson };
const refused: Answer = { kind: 'connect', code: 'ECONNREFUSED' };

function setup(http: UpstreamHttp) {
  let now = 0;
  const balancer = createEndpointBalancer(pools, {
    settings: { failureThreshold: 2, baseEjectionMs: 5_000, maxEjectionMs: 60_000 },
    clock: () => now,
  });
  const deps: LiveCompletionDeps = {
    pools,
    adapters: createAdapterRegistry(),
    http,
    credential: () => undefined,
    logger: silentLogger,
    metrics: noMetrics,
    balancer,
  };
  return { deps, balancer, advance: (ms: number) => (now += ms) };
}

function request(candidates: string[], residency: 'eu' | 'uk' = 'eu'): CompletionRequest {
  return {
    requestId: 'req_balance',
    accountId: 'account-1',
    environment: 'live',
    residency,
    model: 'm',
    candidates: candidates.map((poolId) => ({ poolId, upstreamModel: `up-${poolId}` })),
    body: Buffer.from(JSON.stringify({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] })),
    stream: false,
    headers: {},
    query: '',
  };
}

async function run(completion: CompletionRequest, deps: LiveCompletionDeps) {
  const items: Result<CompletionEvent>[] = [];
  for await (const item of completeLive(completion, new AbortController().signal, deps)) items.push(item);
  return items;
}

const outstanding = (balancer: EndpointBalancer) =>
  Object.fromEntries(balancer.status().map((endpoint) => [endpoint.endpointUrl, endpoint.outstanding]));

describe('failover with endpoint balancing and health', () => {
  it('sends later requests straight to the healthy endpoint once the failing one is ejected', async () => {
    const upstream = fakeHttp({ 'a1.test': refused, 'a2.test': okAnswer });
    const { deps } = setup(upstream.http);
    for (let i = 0; i < 6; i += 1) {
      expect((await run(request(['eu-a']), deps))[0]).toEqual(
        ok({ kind: 'started', poolId: 'eu-a', region: 'eu-west' }),
      );
    }
    // Round-robin starts the next call at a1 again, until its second failure ejects it.
    expect(upstream.hosts()).toEqual([
      'a1.test',
      'a2.test',
      'a1.test',
      'a2.test',
      'a2.test',
      'a2.test',
      'a2.test',
      'a2.test',
    ]);
  });

  it('sends the next call to the endpoint with fewer outstanding requests', async () => {
    const upstream = fakeHttp({ 'a1.test': okAnswer, 'a2.test': okAnswer });
    const { deps, balancer } = setup(upstream.http);
    const first = completeLive(request(['eu-a']), new AbortController().signal, deps);
    expect((await first.next()).value).toEqual(ok({ kind: 'started', poolId: 'eu-a', region: 'eu-west' }));
    expect(outstanding(balancer)).toMatchObject({ 'http://a1.test': 1, 'http://a2.test': 0 });
    await run(request(['eu-a']), deps);
    await run(request(['eu-a']), deps);
    expect(upstream.hosts()).toEqual(['a1.test', 'a2.test', 'a2.test']);
    // The caller stops reading: the endpoint is free again.
    await first.return();
    expect(outstanding(balancer)).toMatchObject({ 'http://a1.test': 0, 'http://a2.test': 0 });
  });

  it('releases the outstanding count when a relay ends and when an attempt fails', async () => {
    const upstream = fakeHttp({ 'a1.test': { status: 500 }, 'a2.test': okAnswer });
    const { deps, balancer } = setup(upstream.http);
    expect((await run(request(['eu-a']), deps)).map((item) => item.ok && item.value.kind)).toEqual([
      'started',
      'message',
      'finished',
    ]);
    expect(Object.values(outstanding(balancer))).toEqual([0, 0, 0, 0]);
  });

  it('moves on to the next pool when every endpoint of a pool is ejected, without trying them', async () => {
    const upstream = fakeHttp({ 'b1.test': okAnswer });
    const { deps } = setup(upstream.http);
    await run(request(['eu-a']), deps);
    await run(request(['eu-a']), deps);
    expect(upstream.hosts()).toEqual(['a1.test', 'a2.test', 'a1.test', 'a2.test']);
    const items = await run(request(['eu-a', 'eu-b']), deps);
    expect(items[0]).toEqual(ok({ kind: 'started', poolId: 'eu-b', region: 'eu-north' }));
    expect(upstream.hosts().slice(4)).toEqual(['b1.test']);
  });

  it('still tries every endpoint, in order, when every candidate is ejected, and never another jurisdiction', async () => {
    const upstream = fakeHttp({ 'uk1.test': okAnswer });
    const { deps } = setup(upstream.http);
    await run(request(['eu-a', 'eu-b', 'uk-a']), deps);
    await run(request(['eu-a', 'eu-b', 'uk-a']), deps);
    expect(new Set(upstream.hosts())).toEqual(new Set(['a1.test', 'a2.test', 'b1.test']));
    const before = upstream.sent.length;
    const items = await run(request(['eu-a', 'eu-b', 'uk-a']), deps);
    expect(items).toEqual([{ ok: false, error: expect.objectContaining({ type: 'api_error' }) }]);
    expect(upstream.hosts().slice(before)).toEqual(['a1.test', 'a2.test', 'b1.test']);
  });

  it('re-admits an ejected endpoint that answers a last-resort attempt', async () => {
    let down = true;
    const upstream = fakeHttp((sent) => (down || new URL(sent.url).host !== 'a1.test' ? refused : okAnswer));
    const { deps, balancer } = setup(upstream.http);
    await run(request(['eu-a']), deps);
    await run(request(['eu-a']), deps);
    expect(balancer.status().filter((endpoint) => endpoint.state === 'open')).toHaveLength(2);
    down = false;
    const items = await run(request(['eu-a']), deps);
    expect(items[0]).toEqual(ok({ kind: 'started', poolId: 'eu-a', region: 'eu-west' }));
    expect(upstream.hosts().slice(4)).toEqual(['a1.test']);
    const states = Object.fromEntries(balancer.status().map((endpoint) => [endpoint.endpointUrl, endpoint.state]));
    expect(states).toMatchObject({ 'http://a1.test': 'closed', 'http://a2.test': 'open' });
  });

  it('lets one trial through after the ejection time, and takes the endpoint back when it answers', async () => {
    let a1: Answer = refused;
    const upstream = fakeHttp((sent) => {
      const host = new URL(sent.url).host;
      return host === 'a1.test' ? a1 : okAnswer;
    });
    const { deps, balancer, advance } = setup(upstream.http);
    for (let i = 0; i < 4; i += 1) await run(request(['eu-a']), deps);
    expect(balancer.status().find((endpoint) => endpoint.endpointUrl === 'http://a1.test')?.state).toBe('open');
    a1 = okAnswer;
    advance(5_000);
    const before = upstream.sent.length;
    for (let i = 0; i < 4; i += 1) await run(request(['eu-a']), deps);
    expect(upstream.hosts().slice(before)).toContain('a1.test');
    expect(balancer.status().find((endpoint) => endpoint.endpointUrl === 'http://a1.test')?.state).toBe('closed');
  });

  it('does not count a rejected request (400) against the endpoint', async () => {
    const rejection = '{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}';
    const upstream = fakeHttp({
      'a1.test': { status: 400, body: rejection },
      'a2.test': { status: 400, body: rejection },
    });
    const { deps, balancer } = setup(upstream.http);
    for (let i = 0; i < 6; i += 1) await run(request(['eu-a']), deps);
    expect(balancer.status().every((endpoint) => endpoint.state === 'closed')).toBe(true);
  });
});
