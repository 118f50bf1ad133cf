import { Counter, Histogram } from '@gw/telemetry';
import type { Registry } from '@gw/telemetry';
import type { TokenUsage } from './completion';

/** What the router measures; the domain reports through this, Prometheus is behind it. */
export interface RouterMetrics {
  /** One attempt on one upstream endpoint; `headersSeconds` when it answered at all. */
  upstreamAttempt(poolId: string, outcome: string, headersSeconds?: number): void;
  /** One Complete call, at its end. `outcome` is `ok`, `cancelled`, `incomplete` or an error type. */
  completion(
    labels: { environment: string; poolId: string; outcome: string },
    seconds: number,
    usage?: TokenUsage,
  ): void;
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
  return {
    upstreamAttempt(poolId, outcome, seconds) {
      attempts.inc({ pool: poolId, outcome });
      if (seconds !== undefined) headersSeconds.observe({ pool: poolId }, seconds);
    },
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
