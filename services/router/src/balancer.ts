import type { Logger } from '@gw/telemetry';
import { CircuitBreaker, defaultBreakerSettings } from './breaker';
import type { BreakerSettings, BreakerState, BreakerTransition, Clock } from './breaker';
import type { EndpointMetrics } from './metrics';
import type { Pool, PoolDirectory } from './pools';

/**
 * Which endpoint of a pool takes the next attempt, and the health of every endpoint: the endpoints
 * not ejected by their circuit breaker (`breaker.ts`), the one with the fewest outstanding requests
 * first, ties broken round-robin. Choosing and counting happen together, synchronously, so that
 * concurrent calls see each other's requests. Never chooses a pool: the failover loop goes through
 * the candidates in policy's order and asks only within one pool.
 */

/** What one attempt says about its endpoint's health. */
export type AttemptHealth =
  /** The endpoint answered: any status but 429 and 5xx. */
  | 'success'
  /** Connection refused or reset, no response headers in time, 429 or 5xx. */
  | 'failure'
  /** Nothing learnt (the caller went away). */
  | 'abandoned';

/** One request outstanding on one endpoint. */
export interface EndpointLease {
  readonly endpointUrl: string;
  /** What the attempt said about the endpoint; only the first report counts. */
  report(health: AttemptHealth): void;
  /** The request is over (failed, relayed to its end, or discarded). Idempotent; reports `abandoned` if nothing was. */
  release(): void;
}

export interface EndpointStatus {
  poolId: string;
  endpointUrl: string;
  state: BreakerState;
  outstanding: number;
}

export interface EndpointBalancer {
  /**
   * Leases the pool's next endpoint for an attempt: not in `exclude` (already tried by this call),
   * not ejected, fewest outstanding requests, ties round-robin. Undefined when none is left.
   */
  acquire(pool: Pool, exclude: ReadonlySet<string>): EndpointLease | undefined;
  /**
   * Leases this endpoint of the pool whatever its state: the last resort when every endpoint of
   * every candidate is ejected. Its success re-admits the endpoint. Undefined when the pool has no
   * such endpoint.
   */
  acquireAnyway(pool: Pool, endpointUrl: string): EndpointLease | undefined;
  /** The result of an active health probe of one endpoint. */
  probed(poolId: string, endpointUrl: string, alive: boolean): void;
  status(): EndpointStatus[];
}

export interface BalancerOptions {
  settings?: BreakerSettings;
  /** Milliseconds; `performance.now` unless a test gives a fake clock. */
  clock?: Clock;
  metrics?: EndpointMetrics;
  logger?: Logger;
}

interface Endpoint {
  poolId: string;
  url: string;
  /** Position in the pool's YAML list. */
  index: number;
  breaker: CircuitBreaker;
  outstanding: number;
}

function sameUrls(endpoints: readonly Endpoint[], urls: readonly string[]): boolean {
  return endpoints.length === urls.length && endpoints.every((endpoint, index) => endpoint.url === urls[index]);
}

/** A breaker's change of state, in the metrics and the log. */
function reportTransition(
  { metrics, logger }: Pick<BalancerOptions, 'metrics' | 'logger'>,
  endpoint: Endpoint,
  transition: BreakerTransition | undefined,
  by: 'request' | 'probe',
): void {
  if (transition === undefined) return;
  const log = { pool_id: endpoint.poolId, endpoint: endpoint.url };
  if (transition.kind === 'ejected') {
    metrics?.healthy(endpoint.poolId, endpoint.url, false);
    metrics?.ejected(endpoint.poolId, endpoint.url);
    logger?.warn(
      { ...log, cause: transition.cause, ejection_ms: transition.ejectionMs, ejection_streak: transition.streak },
      'upstream endpoint ejected',
    );
  } else {
    metrics?.healthy(endpoint.poolId, endpoint.url, true);
    logger?.info({ ...log, readmitted_by: by }, 'upstream endpoint readmitted');
  }
}

export function createEndpointBalancer(pools: PoolDirectory, options: BalancerOptions = {}): EndpointBalancer {
  const settings = options.settings ?? defaultBreakerSettings;
  const clock = options.clock ?? (() => performance.now());
  const { metrics } = options;
  const endpointsByPool = new Map<string, Endpoint[]>();
  /** Per pool: the YAML index after the last endpoint chosen, where the round-robin resumes. */
  const cursors = new Map<string, number>();

  const endpointsOf = (pool: Pick<Pool, 'id' | 'endpoints'>): Endpoint[] => {
    let endpoints = endpointsByPool.get(pool.id);
    // A pool whose endpoints a reload of the YAML changed starts afresh.
    if (endpoints === undefined || !sameUrls(endpoints, pool.endpoints)) {
      endpoints = pool.endpoints.map((url, index) => ({
        poolId: pool.id,
        url,
        index,
        breaker: new CircuitBreaker(settings, clock),
        outstanding: 0,
      }));
      endpointsByPool.set(pool.id, endpoints);
      for (const endpoint of endpoints) metrics?.added(endpoint.poolId, endpoint.url);
    }
    return endpoints;
  };
  for (const pool of pools.values()) endpointsOf(pool);

  const changed = (endpoint: Endpoint, transition: BreakerTransition | undefined, by: 'request' | 'probe') =>
    reportTransition(options, endpoint, transition, by);

  const lease = (endpoint: Endpoint, anyway = false): EndpointLease => {
    const ticket = anyway ? endpoint.breaker.admitAnyway() : endpoint.breaker.admit();
    endpoint.outstanding += 1;
    metrics?.outstanding(endpoint.poolId, endpoint.url, endpoint.outstanding);
    let reported = false;
    let released = false;
    const report = (health: AttemptHealth) => {
      if (reported) return;
      reported = true;
      if (health === 'success') changed(endpoint, endpoint.breaker.succeeded(ticket), 'request');
      else if (health === 'failure') changed(endpoint, endpoint.breaker.failed(ticket), 'request');
      else endpoint.breaker.abandoned(ticket);
    };
    return {
      endpointUrl: endpoint.url,
      report,
      release() {
        if (released) return;
        released = true;
        report('abandoned');
        endpoint.outstanding -= 1;
        metrics?.outstanding(endpoint.poolId, endpoint.url, endpoint.outstanding);
      },
    };
  };

  return {
    acquire(pool, exclude) {
      const open = endpointsOf(pool).filter((endpoint) => !exclude.has(endpoint.url) && endpoint.breaker.available());
      if (open.length === 0) return undefined;
      const fewest = Math.min(...open.map((endpoint) => endpoint.outstanding));
      const tied = open.filter((endpoint) => endpoint.outstanding === fewest);
      const cursor = cursors.get(pool.id) ?? 0;
      const chosen = tied.find((endpoint) => endpoint.index >= cursor) ?? tied[0]!;
      cursors.set(pool.id, chosen.index + 1);
      return lease(chosen);
    },

    acquireAnyway(pool, endpointUrl) {
      const endpoint = endpointsOf(pool).find((candidate) => candidate.url === endpointUrl);
      return endpoint === undefined ? undefined : lease(endpoint, true);
    },

    probed(poolId, endpointUrl, alive) {
      const endpoint = endpointsByPool.get(poolId)?.find((candidate) => candidate.url === endpointUrl);
      if (endpoint === undefined) return;
      changed(endpoint, alive ? endpoint.breaker.probeSucceeded() : endpoint.breaker.probeFailed(), 'probe');
    },

    status() {
      return [...endpointsByPool.values()].flat().map((endpoint) => ({
        poolId: endpoint.poolId,
        endpointUrl: endpoint.url,
        state: endpoint.breaker.state(),
        outstanding: endpoint.outstanding,
      }));
    },
  };
}
