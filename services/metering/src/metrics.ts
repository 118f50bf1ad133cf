import { Counter, Gauge, Histogram } from '@gw/telemetry';
import type { Registry } from '@gw/telemetry';
import { usageCappedMetric } from '@gw/usage';
import type { UnpricedReason } from './pricing';

/** Every reason an event is stored unpriced: each series exists at zero from the start, for rates and alerts. */
const unpricedReasons: readonly UnpricedReason[] = ['unknown_model', 'unknown_plan'];

export interface MeteringMetrics {
  eventsWritten: Counter;
  duplicatesIgnored: Counter;
  eventsSkipped: Counter;
  eventsUnpriced: Counter<'reason'>;
  usageCapped: Counter;
  batchSeconds: Histogram;
  /** Messages of a partition not yet applied, as of the last chunk stored from it. */
  consumerLag: Gauge<'partition'>;
  /** The newest `ended_at` applied so far (ms since the epoch); its age is read at each scrape. */
  newestAppliedEvent: { endedAtUnixMs: number };
}

export function meteringMetrics(registry: Registry, now: () => number = Date.now): MeteringMetrics {
  const newestAppliedEvent = { endedAtUnixMs: 0 };
  new Gauge({
    name: 'gateway_metering_newest_event_age_seconds',
    help: 'Age of the newest usage event applied (now minus its ended_at); absent until one is applied.',
    registers: [registry],
    collect() {
      if (newestAppliedEvent.endedAtUnixMs > 0) this.set((now() - newestAppliedEvent.endedAtUnixMs) / 1000);
    },
  });
  const eventsUnpriced = new Counter({
    name: 'metering_usage_events_unpriced_total',
    help: 'Live usage events stored at cost 0 because the gateway configuration does not know their model or plan.',
    labelNames: ['reason'],
    registers: [registry],
  });
  for (const reason of unpricedReasons) eventsUnpriced.labels({ reason }).inc(0);
  return {
    newestAppliedEvent,
    eventsUnpriced,
    consumerLag: new Gauge({
      name: 'gateway_metering_consumer_lag_messages',
      help: 'Usage messages of a partition behind the last one applied, as of the last chunk stored from it.',
      labelNames: ['partition'],
      registers: [registry],
    }),
    eventsWritten: new Counter({
      name: 'metering_usage_events_written_total',
      help: 'Usage events stored for the first time.',
      registers: [registry],
    }),
    duplicatesIgnored: new Counter({
      name: 'metering_usage_events_duplicate_total',
      help: 'Usage events ignored because their event id was already stored.',
      registers: [registry],
    }),
    usageCapped: new Counter({ ...usageCappedMetric, registers: [registry] }),
    eventsSkipped: new Counter({
      name: 'metering_usage_events_skipped_total',
      help: 'Messages on the usage topic that are not a storable UsageEvent; skipped and logged.',
      registers: [registry],
    }),
    batchSeconds: new Histogram({
      name: 'metering_batch_duration_seconds',
      help: 'Time to decode a batch of usage messages and store it in one transaction.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
  };
}
