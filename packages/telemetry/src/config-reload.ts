import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { Logger } from './logger';

/** A configuration file in force: which text (a digest) and since when. */
export interface ConfigInForce {
  hash: string;
  loadedAtMs: number;
}

/** One attempt to reload a configuration file, as the watch of the file reports it. */
export type ConfigReloadReport =
  { outcome: 'applied'; loaded: ConfigInForce } | { outcome: 'rejected'; hash: string; reason: string };

/**
 * Logs and counts the reloads of the gateway YAML: `gateway_config_reload_total{outcome}`, and which
 * file is in force since when (`gateway_config_info{hash}`, `gateway_config_loaded_timestamp_seconds`),
 * so that a refused file is seen both in the log (with why) and on a dashboard or alert.
 */
export function configReloadReporter(
  logger: Logger,
  registry: Registry,
  initial: ConfigInForce,
): (report: ConfigReloadReport) => void {
  const reloads = new Counter({
    name: 'gateway_config_reload_total',
    help: 'Reloads of the gateway YAML after its file changed, by outcome: applied, or rejected (the file in force stays).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  reloads.inc({ outcome: 'applied' }, 0);
  reloads.inc({ outcome: 'rejected' }, 0);
  const info = new Gauge({
    name: 'gateway_config_info',
    help: 'The gateway YAML in force, by the first 16 hex digits of the SHA-256 of its text (always 1).',
    labelNames: ['hash'],
    registers: [registry],
  });
  const loadedAt = new Gauge({
    name: 'gateway_config_loaded_timestamp_seconds',
    help: 'When the gateway YAML in force was loaded (Unix time).',
    registers: [registry],
  });
  const inForce = (loaded: ConfigInForce) => {
    info.reset();
    info.set({ hash: loaded.hash }, 1);
    loadedAt.set(loaded.loadedAtMs / 1_000);
  };
  inForce(initial);
  return (report) => {
    reloads.inc({ outcome: report.outcome });
    if (report.outcome === 'applied') {
      inForce(report.loaded);
      logger.info({ config_hash: report.loaded.hash }, 'gateway configuration reloaded');
    } else {
      logger.error(
        { config_hash: report.hash, reason: report.reason },
        'gateway configuration file refused; the configuration in force stays',
      );
    }
  };
}
