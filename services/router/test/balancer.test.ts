import { createEndpointBalancer } from '../src/balancer';
import type { EndpointLease } from '../src/balancer';
import type { EndpointMetrics } from '../src/metrics';
import type { Pool } from '../src/pools';

const pool: Pool = {
  id: 'p',
  region: 'eu-west',
  jurisdiction: 'eu',
  adapter: 'anthropic',
  endpoints: ['http://a', 'http://b', 'http://c'],
  credentialEnv: undefined,
};
const settings = { failureThreshold: 2, baseEjectionMs: 5_000, maxEjectionMs: 60_000 };

function setup() {
  let now = 0;
  const recorded: string[] = [];
  const gauges = new Map<string, number>();
  const metrics: EndpointMetrics = {
    added: (poolId, endpoint) => gauges.set(`healthy ${poolId} ${endpoint}`, 1),
    healthy: (poolId, endpoint, healthy) => gauges.set(`healthy ${poolId} ${endpoint}`, healthy ? 1 : 0),
    ejected: (poolId, endpoint) => recorded.push(`ejected ${poolId} ${endpoint}`),
    outstanding: (poolId, endpoint, count) => gauges.set(`outstanding ${poolId} ${endpoint}`, count),
    probe: () => undefined,
  };
  const balancer = createEndpointBalancer(new Map([[pool.id, pool]]), { settings, clock: () => now, metrics });
  return { balancer, advance: (ms: number) => (now += ms), recorded, gauges };
}

const none = new Set<string>();
const url = (lease: EndpointLease | undefined) => lease?.endpointUrl;

/** Fails the endpoint until its breaker ejects it. */
function eject(balancer: ReturnType<typeof setup>['balancer'], endpointUrl: string) {
  for (let i = 0; i < settings.failureThreshold; i += 1) {
    const lease = balancer.acquireAnyway(pool, endpointUrl)!;
    lease.report('failure');
    lease.release();
  }
}

describe('endpoint balancer', () => {
  it('chooses the endpoint with the fewest outstanding requests', () => {
    const { balancer } = setup();
    const first = balancer.acquire(pool, none)!;
    const second = balancer.acquire(pool, none)!;
    const third = balancer.acquire(pool, none)!;
    expect([first, second, third].map(url)).toEqual(['http://a', 'http://b', 'http://c']);
    // a and c are done, b still streams: the next two go to a and c, and only then b again.
    first.release();
    third.release();
    expect(url(balancer.acquire(pool, none))).toBe('http://a');
    expect(url(balancer.acquire(pool, none))).toBe('http://c');
    second.release();
    expect(url(balancer.acquire(pool, none))).toBe('http://b');
  });

  it('breaks ties round-robin across calls', () => {
    const { balancer } = setup();
    const chosen: string[] = [];
    for (let i = 0; i < 7; i += 1) {
      const lease = balancer.acquire(pool, none)!;
      chosen.push(lease.endpointUrl);
      lease.report('success');
      lease.release();
    }
    expect(chosen).toEqual(['http://a', 'http://b', 'http://c', 'http://a', 'http://b', 'http://c', 'http://a']);
  });

  it('never offers an endpoint the call already tried', () => {
    const { balancer } = setup();
    const tried = new Set<string>();
    const order: string[] = [];
    for (let lease = balancer.acquire(pool, tried); lease; lease = balancer.acquire(pool, tried)) {
      tried.add(lease.endpointUrl);
      order.push(lease.endpointUrl);
      lease.report('failure');
      lease.release();
    }
    expect(order).toHaveLength(3);
    expect(new Set(order).size).toBe(3);
  });

  it('skips ejected endpoints, however idle', () => {
    const { balancer, recorded, gauges } = setup();
    eject(balancer, 'http://a');
    expect(recorded).toEqual(['ejected p http://a']);
    expect(gauges.get('healthy p http://a')).toBe(0);
    const busy = [balancer.acquire(pool, none)!, balancer.acquire(pool, none)!, balancer.acquire(pool, none)!];
    expect(busy.map(url)).not.toContain('http://a');
    expect(balancer.status().find((endpoint) => endpoint.endpointUrl === 'http://a')).toMatchObject({
      state: 'open',
      outstanding: 0,
    });
  });

  it('offers nothing when every endpoint is ejected; acquireAnyway still leases one', () => {
    const { balancer } = setup();
    for (const endpoint of pool.endpoints) eject(balancer, endpoint);
    expect(balancer.acquire(pool, none)).toBeUndefined();
    const lease = balancer.acquireAnyway(pool, 'http://b')!;
    expect(lease.endpointUrl).toBe('http://b');
    expect(balancer.status().find((endpoint) => endpoint.endpointUrl === 'http://b')?.outstanding).toBe(1);
    lease.release();
    expect(balancer.acquireAnyway(pool, 'http://elsewhere')).toBeUndefined();
  });

  it('offers a half-open endpoint to one trial at a time, and takes it back on success', () => {
    const { balancer, advance, gauges } = setup();
    eject(balancer, 'http://a');
    eject(balancer, 'http://b');
    eject(balancer, 'http://c');
    advance(5_000);
    const trial = balancer.acquire(pool, none)!;
    const others = [balancer.acquire(pool, none)!, balancer.acquire(pool, none)!];
    expect([trial, ...others].map(url)).toEqual(['http://a', 'http://b', 'http://c']);
    expect(balancer.acquire(pool, none)).toBeUndefined();
    trial.report('success');
    expect(gauges.get('healthy p http://a')).toBe(1);
    expect(url(balancer.acquire(pool, none))).toBe('http://a');
  });

  it('counts outstanding requests until released, once, and frees a trial that was never reported', () => {
    const { balancer, advance, gauges } = setup();
    const lease = balancer.acquire(pool, none)!;
    expect(gauges.get('outstanding p http://a')).toBe(1);
    lease.release();
    lease.release();
    expect(gauges.get('outstanding p http://a')).toBe(0);

    eject(balancer, 'http://b');
    advance(5_000);
    const tried = new Set(['http://a', 'http://c']);
    const trial = balancer.acquire(pool, tried)!;
    expect(trial.endpointUrl).toBe('http://b');
    expect(balancer.acquire(pool, tried)).toBeUndefined();
    trial.release();
    expect(url(balancer.acquire(pool, tried))).toBe('http://b');
  });

  it('re-admits an ejected endpoint on a successful probe', () => {
    const { balancer, gauges } = setup();
    eject(balancer, 'http://a');
    balancer.probed('p', 'http://a', false);
    expect(balancer.acquire(pool, new Set(['http://b', 'http://c']))).toBeUndefined();
    balancer.probed('p', 'http://a', true);
    expect(gauges.get('healthy p http://a')).toBe(1);
    expect(url(balancer.acquire(pool, new Set(['http://b', 'http://c'])))).toBe('http://a');
  });
});
