import { betaLabel, betasDroppedMetric } from '@gw/catalogue';
import { Counter, Gauge, Histogram } from '@gw/telemetry';
import type { Registry } from '@gw/telemetry';
import type { EndpointStatus } from './balancer';
import type { BreakerState } from './breaker';
import type { TokenUsage } from './completion';

/** What the router measures; the domain reports through this, Prometheus is behind it. */
export interface RouterMetrics {
  /** One attempt on one upstream endpoint; `headersSeconds` when it answered at all. */
  upstreamAttempt(poolId: string, outcome: string, headersSeconds?: number): void;
  /** An attempt that failed in a way that moves on to the next endpoint or pool. */
  movedOn(poolId: string, outcome: string): void;
  /** Betas a translating adapter did not pass on (`gateway_upstream_betas_dropped_total`). */
  betasDropped(provider: string, names: readonly string[]): void;
  /** One Complete call, at its end. `outcome` is `ok`, `cancelled`, `incomplete` or an error type. */
  completion(
    labels: { environment: string; poolId: string; outcome: string },
    seconds: number,
    usage?: TokenUsage,
  ): void;
}

/** The health and load of each upstream endpoint (`balancer.ts`, `health-checks.ts`). */
export interface EndpointMetrics {
  /** A new endpoint: healthy, nothing outstanding, never ejected (so that every series exists from the start). */
  added(poolId: string, endpointUrl: string): void;
  /** 1 while the endpoint's circuit breaker is closed, 0 while it is ejected (open or half-open). */
  healthy(poolId: string, endpointUrl: string, healthy: boolean): void;
  ejected(poolId: string, endpointUrl: string): void;
  outstanding(poolId: string, endpointUrl: string, count: number): void;
  /** One active health probe: `alive`, `unreachable`, `timeout` or `status_<code>`. */
  probe(poolId: string, endpointUrl: string, outcome: string): void;
}

export function createEndpointMetrics(registry: Registry): EndpointMetrics {
  const healthy = new Gauge({
    name: 'router_endpoint_healthy',
    help: 'Whether an upstream endpoint takes requests: 1 while its circuit breaker is closed, 0 while ejected.',
    labelNames: ['pool', 'endpoint'],
    registers: [registry],
  });
  const ejections = new Counter({
    name: 'router_endpoint_ejections_total',
    help: 'Times an upstream endpoint was ejected by its circuit breaker.',
    labelNames: ['pool', 'endpoint'],
    registers: [registry],
  });
  const outstanding = new Gauge({
    name: 'router_endpoint_outstanding_requests',
    help: 'Requests outstanding on an upstream endpoint: sent and not yet answered, or still being relayed.',
    labelNames: ['pool', 'endpoint'],
    registers: [registry],
  });
  const probes = new Counter({
    name: 'router_endpoint_health_probes_total',
    help: 'Active health probes of upstream endpoints, by outcome.',
    labelNames: ['pool', 'endpoint', 'outcome'],
    registers: [registry],
  });
  return {
    added(pool, endpoint) {
      healthy.set({ pool, endpoint }, 1);
      outstanding.set({ pool, endpoint }, 0);
      ejections.inc({ pool, endpoint }, 0);
    },
    healthy: (pool, endpoint, isHealthy) => healthy.set({ pool, endpoint }, isHealthy ? 1 : 0),
    ejected: (pool, endpoint) => ejections.inc({ pool, endpoint }),
    outstanding: (pool, endpoint, count) => outstanding.set({ pool, endpoint }, count),
    probe: (pool, endpoint, outcome) => probes.inc({ pool, endpoint, outcome }),
  };
}

const breakerStates: readonly BreakerState[] = ['closed', 'open', 'half_open'];

/**
 * Each endpoint's circuit breaker state, read at each scrape: 1 for the current state, 0 for the others,
 * so that half-open (one trial request allowed) is told apart from open, which `router_endpoint_healthy`
 * does not.
 */
export function registerBreakerStates(registry: Registry, status: () => EndpointStatus[]): void {
  new Gauge({
    name: 'router_endpoint_breaker_state',
    help: '1 for the circuit breaker state an upstream endpoint is in (closed, open, half_open), 0 for the others.',
    labelNames: ['pool', 'endpoint', 'state'],
    registers: [registry],
    collect() {
      for (const endpoint of status()) {
        for (const state of breakerStates) {
          this.set({ pool: endpoint.poolId, endpoint: endpoint.endpointUrl, state }, endpoint.state === state ? 1 : 0);
        }
      }
    },
  });
}

/**
 * One series per pool with value 1, naming its residency tier and region, so that alerts and dashboards
 * join the per-pool and per-endpoint figures to a tier (`* on (pool) group_left (jurisdiction)`).
 */
export function registerPoolInfo(
  registry: Registry,
  pools: { values(): Iterable<{ id: string; jurisdiction: string; region: string }> },
): void {
  new Gauge({
    name: 'router_pool_info',
    help: 'Always 1: the residency tier (jurisdiction) and region of each upstream pool.',
    labelNames: ['pool', 'jurisdiction', 'region'],
    registers: [registry],
    // Read at each scrape from the live directory: a configuration reload's pools show at once.
    collect() {
      this.reset();
      for (const pool of pools.values()) {
        this.set({ pool: pool.id, jurisdiction: pool.jurisdiction, region: pool.region }, 1);
      }
    },
  });
}

export function createRouterMetrics(registry: Registry): RouterMetrics {
  const attempts = new Counter({
    name: 'router_upstream_attempts_total',
    help: 'Attempts on upstream endpoints, by pool and outcome (accepted, or why not).',
    labelNames: ['pool', 'outcome'],
    registers: [registry],
  });
  const headersSeconds = new Histogram({
    name: 'router_upstream_response_headers_seconds',
    help: 'Time from sending a request upstream to its response headers.',
    labelNames: ['pool'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    registers: [registry],
  });
  const failovers = new Counter({
    name: 'router_failovers_total',
    help: 'Failed upstream attempts after which the router moves on to the next endpoint or pool, by pool and outcome.',
    labelNames: ['pool', 'outcome'],
    registers: [registry],
  });
  const completions = new Counter({
    name: 'router_completions_total',
    help: 'Complete calls, by key environment, pool and outcome.',
    labelNames: ['environment', 'pool', 'outcome'],
    registers: [registry],
  });
  const completionSeconds = new Histogram({
    name: 'router_completion_duration_seconds',
    help: 'Duration of Complete calls, from the call to its last message.',
    labelNames: ['environment'],
    buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    registers: [registry],
  });
  const tokens = new Counter({
    name: 'router_tokens_total',
    help: 'Tokens reported by upstreams (and the test stub), by kind.',
    labelNames: ['environment', 'pool', 'kind'],
    registers: [registry],
  });
  const betasDropped = new Counter({
    ...betasDroppedMetric,
    labelNames: [...betasDroppedMetric.labelNames],
    registers: [registry],
  });
  return {
    betasDropped(provider, names) {
      for (const name of names) betasDropped.inc({ provider, beta: betaLabel(name) });
    },
    upstreamAttempt(poolId, outcome, seconds) {
      attempts.inc({ pool: poolId, outcome });
      if (seconds !== undefined) headersSeconds.observe({ pool: poolId }, seconds);
    },
    movedOn: (poolId, outcome) => failovers.inc({ pool: poolId, outcome }),
    completion({ environment, poolId, outcome }, seconds, usage) {
      completions.inc({ environment, pool: poolId, outcome });
      completionSeconds.observe({ environment }, seconds);
      if (usage === undefined) return;
      const labels = { environment, pool: poolId };
      tokens.inc({ ...labels, kind: 'input' }, usage.inputTokens);
      tokens.inc({ ...labels, kind: 'output' }, usage.outputTokens);
      tokens.inc({ ...labels, kind: 'cache_read' }, usage.cacheReadInputTokens);
      tokens.inc({ ...labels, kind: 'cache_creation' }, usage.cacheCreationInputTokens);
    },
  };
}
