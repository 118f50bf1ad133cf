import { parseGatewayConfig } from '@gw/config';
import { err, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { createEndpointBalancer } from '../src/balancer';
import { probeEndpoint, startHealthChecks } from '../src/health-checks';
import { createPoolDirectory } from '../src/pools';
import type { ProbeHttp, TransportFailure } from '../src/upstream-http';
import { silentLogger } from './fakes';
import { holdsFor, waitUntil } from '@gw/testing';

const config = parseGatewayConfig(`
regions:
  - { id: eu-west, jurisdiction: eu }
  - { id: uk-south, jurisdiction: uk }
pools:
  - { id: eu-a, region: eu-west, adapter: anthropic, endpoints: [{ url: 'http://a1.test' }, { url: 'http://shared.test/' }] }
  - { id: uk-a, region: uk-south, adapter: anthropic, endpoints: [{ url: 'http://shared.test' }] }
models:
  - alias: m
    displayName: M
    createdAt: '2025-01-01T00:00:00Z'
    pricing: { inputGbpPerMtok: 1, outputGbpPerMtok: 1 }
    servedBy: [{ pool: eu-a, upstreamModel: m-a }, { pool: uk-a, upstreamModel: m-uk }]
plans:
  - id: p
    residency: [eu, uk]
    models: all
    limits: { requestsPerMinute: 1, concurrency: 1, monthlyTokens: 1 }
    overage: { enabled: false, gbpPerMtok: 0 }
`);

type ProbeAnswer = Result<number, TransportFailure>;

function fakeProbes(answers: Record<string, ProbeAnswer>) {
  const probed: string[] = [];
  const http: ProbeHttp = {
    async probe(url) {
      probed.push(url);
      return answers[new URL(url).host] ?? err({ kind: 'connect', code: 'ECONNREFUSED' });
    },
  };
  return { http, probed };
}

describe('health probes', () => {
  it('counts any answer below 500 as alive, and connection errors, timeouts and 5xx as failed', async () => {
    const signal = new AbortController().signal;
    const outcome = (answer: ProbeAnswer) =>
      probeEndpoint(fakeProbes({ 'x.test': answer }).http, 'http://x.test/v1/models', 2000, signal);
    expect(await outcome(ok(200))).toBe('alive');
    expect(await outcome(ok(401))).toBe('alive');
    expect(await outcome(ok(404))).toBe('alive');
    expect(await outcome(ok(429))).toBe('alive');
    expect(await outcome(ok(500))).toBe('status_500');
    expect(await outcome(ok(503))).toBe('status_503');
    expect(await outcome(err({ kind: 'connect', code: 'ECONNREFUSED' }))).toBe('unreachable');
    expect(await outcome(err({ kind: 'reset', code: 'ECONNRESET' }))).toBe('unreachable');
    expect(await outcome(err({ kind: 'timeout', code: 'PROBE_TIMEOUT' }))).toBe('timeout');
    expect(await outcome(err({ kind: 'cancelled', code: 'ABORTED' }))).toBeUndefined();
  });

  it('probes GET /v1/models of every endpoint once per round, and closes breakers it finds alive', async () => {
    const pools = createPoolDirectory(config);
    const balancer = createEndpointBalancer(pools, {
      settings: { failureThreshold: 1, baseEjectionMs: 60_000, maxEjectionMs: 60_000 },
    });
    const euA = pools.get('eu-a')!;
    const lease = balancer.acquireAnyway(euA, 'http://a1.test')!;
    lease.report('failure');
    lease.release();
    expect(balancer.acquire(euA, new Set(['http://shared.test']))).toBeUndefined();

    const probes = fakeProbes({ 'a1.test': ok(404), 'shared.test': ok(503) });
    const checks = startHealthChecks({
      pools,
      balancer,
      http: probes.http,
      settings: { intervalMs: 60_000, timeoutMs: 100 },
      logger: silentLogger,
    });
    await checks.runOnce();
    await checks.stop();
    // The first round at start, then ours; the URL two pools share is probed once a round.
    expect(probes.probed.sort()).toEqual([
      'http://a1.test/v1/models',
      'http://a1.test/v1/models',
      'http://shared.test/v1/models',
      'http://shared.test/v1/models',
    ]);
    const states = Object.fromEntries(
      balancer.status().map((endpoint) => [`${endpoint.poolId} ${endpoint.endpointUrl}`, endpoint.state]),
    );
    expect(states).toEqual({
      'eu-a http://a1.test': 'closed',
      'eu-a http://shared.test': 'open',
      'uk-a http://shared.test': 'open',
    });
  });

  it('probes again every interval until stopped', async () => {
    const pools = createPoolDirectory(config);
    const probes = fakeProbes({});
    const checks = startHealthChecks({
      pools,
      balancer: createEndpointBalancer(pools),
      http: probes.http,
      settings: { intervalMs: 20, timeoutMs: 10 },
      logger: silentLogger,
    });
    await waitUntil(() => probes.probed.length / 2 >= 3, { what: 'three rounds of probes', timeoutMs: 2_000 });
    await checks.stop();
    const rounds = probes.probed.length / 2;
    // Three intervals after the stop, no round more.
    await holdsFor(
      () => probes.probed.length / 2,
      { what: 'no probe after the stop', forMs: 60 },
      (now) => now === rounds,
    );
  });
});
