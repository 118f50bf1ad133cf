import type { Logger } from '@gw/telemetry';
import type { EndpointBalancer } from './balancer';
import type { EndpointMetrics } from './metrics';
import type { PoolDirectory } from './pools';
import type { ProbeHttp } from './upstream-http';

/**
 * Active health checks: every endpoint of every pool is probed every `intervalMs` with a cheap GET
 * the pool's protocol allows. Any HTTP answer below 500 counts as alive; a connection error, no
 * answer within `timeoutMs`, or a 5xx as a failed probe. Results go to the endpoint's circuit
 * breaker (`balancer.ts`): a success closes it, a failure counts like a failed request.
 */

export interface HealthCheckSettings {
  intervalMs: number;
  /** Bounds one probe, connection included. */
  timeoutMs: number;
}

export const defaultHealthCheckSettings: HealthCheckSettings = { intervalMs: 10_000, timeoutMs: 2_000 };

/**
 * The probe path of each upstream protocol, by the pool's `adapter`, appended to the endpoint's base
 * URL. Kept here rather than in the adapters' own config: `GET /v1/models` exists in both the
 * Anthropic and the OpenAI-compatible APIs, needs no body, and without a credential is answered
 * 401, which still proves the endpoint alive. A protocol without an entry is not probed (its
 * endpoints rely on the passive checks alone).
 */
export const probePathsByAdapter: Readonly<Record<string, string>> = {
  anthropic: '/v1/models',
  openai: '/v1/models',
};

export type ProbeOutcome = 'alive' | 'unreachable' | 'timeout' | `status_${number}`;

/** One probe: `alive`, or why not; undefined when cancelled. */
export async function probeEndpoint(
  http: ProbeHttp,
  url: string,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<ProbeOutcome | undefined> {
  const answered = await http.probe(url, { timeoutMs, signal });
  if (answered.ok) return answered.value < 500 ? 'alive' : `status_${answered.value}`;
  switch (answered.error.kind) {
    case 'cancelled':
      return undefined;
    case 'timeout':
      return 'timeout';
    case 'connect':
    case 'reset':
      return 'unreachable';
  }
}

export interface HealthCheckDeps {
  pools: PoolDirectory;
  balancer: EndpointBalancer;
  http: ProbeHttp;
  settings: HealthCheckSettings;
  logger: Logger;
  metrics?: EndpointMetrics;
}

export interface HealthChecks {
  /** One round over every endpoint; resolves when every probe is done. */
  runOnce(): Promise<void>;
  /** Stops the rounds and cancels the probes in flight. */
  stop(): Promise<void>;
  /** The pools changed (the YAML was reloaded): the next round probes the endpoints they have now. */
  retarget(): void;
}

interface ProbeTarget {
  url: string;
  /** Every (pool, endpoint) behind this URL: a URL shared by pools is probed once per round. */
  endpoints: { poolId: string; endpointUrl: string }[];
}

function probeTargets(pools: PoolDirectory, logger: Logger): ProbeTarget[] {
  const targets = new Map<string, ProbeTarget>();
  for (const pool of pools.values()) {
    const path = probePathsByAdapter[pool.adapter];
    if (path === undefined) {
      logger.warn({ pool_id: pool.id, adapter: pool.adapter }, 'no health probe for this adapter: passive checks only');
      continue;
    }
    for (const endpointUrl of pool.endpoints) {
      const url = `${endpointUrl}${path}`;
      const target = targets.get(url) ?? { url, endpoints: [] };
      target.endpoints.push({ poolId: pool.id, endpointUrl });
      targets.set(url, target);
    }
  }
  return [...targets.values()];
}

/** The probes of every endpoint: one round at once, then one every interval (rounds never overlap). */
export function startHealthChecks(deps: HealthCheckDeps): HealthChecks {
  const { balancer, http, settings, logger, metrics } = deps;
  let targets = probeTargets(deps.pools, logger);
  const stopped = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let round: Promise<void> = Promise.resolve();

  const probeTarget = async (target: ProbeTarget) => {
    const began = performance.now();
    const outcome = await probeEndpoint(http, target.url, settings.timeoutMs, stopped.signal);
    if (outcome === undefined) return;
    for (const { poolId, endpointUrl } of target.endpoints) {
      metrics?.probe(poolId, endpointUrl, outcome);
      balancer.probed(poolId, endpointUrl, outcome === 'alive');
      const fields = {
        pool_id: poolId,
        endpoint: endpointUrl,
        outcome,
        duration_ms: Math.round(performance.now() - began),
      };
      logger.debug(fields, 'upstream health probe');
    }
  };

  const runOnce = async () => {
    await Promise.all(
      targets.map((target) =>
        probeTarget(target).catch((error: unknown) =>
          logger.error({ err: error, probe_url: target.url }, 'upstream health probe failed to run'),
        ),
      ),
    );
  };

  const schedule = () => {
    if (stopped.signal.aborted) return;
    timer = setTimeout(() => {
      round = runOnce().finally(schedule);
    }, settings.intervalMs);
    timer.unref();
  };

  // Rounds run even without targets: a reload may add pools to probe.
  round = runOnce().finally(schedule);

  return {
    runOnce,
    retarget() {
      targets = probeTargets(deps.pools, logger);
    },
    async stop() {
      stopped.abort();
      clearTimeout(timer);
      await round;
    },
  };
}
