import type { Cluster, Redis } from 'ioredis';
import { Counter, Gauge, Histogram } from '@gw/telemetry';
import type { Registry } from '@gw/telemetry';
import type { ScriptObserver } from './limits';

const scripts = ['reserve', 'acquire', 'acquire_reserved', 'peek', 'renew', 'release', 'rebuild'];

/** Redis as quota sees it: each limits script's time and failures, and whether the connection is up. */
export function redisMetrics(registry: Registry, redis: Redis | Cluster): ScriptObserver {
  const seconds = new Histogram({
    name: 'gateway_quota_redis_decision_seconds',
    help: 'Time of one limits script on Redis (a decision, a renewal, a release), by script.',
    labelNames: ['script'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [registry],
  });
  const errors = new Counter({
    name: 'gateway_quota_redis_errors_total',
    help: 'Limits scripts Redis did not answer (unreachable, timed out, failed), by script.',
    labelNames: ['script'],
    registers: [registry],
  });
  new Gauge({
    name: 'gateway_quota_redis_up',
    help: "1 while quota's Redis connection is ready, else 0: without it every request is refused (503).",
    registers: [registry],
    collect() {
      this.set(redis.status === 'ready' ? 1 : 0);
    },
  });
  for (const script of scripts) errors.inc({ script }, 0);
  return (script, elapsed, failed) => {
    seconds.observe({ script }, elapsed);
    if (failed) errors.inc({ script });
  };
}
