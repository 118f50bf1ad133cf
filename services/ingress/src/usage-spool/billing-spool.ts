import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DurableUsagePublisher, SpoolFullError, UsageEventProducer } from '@gw/kafka';
import type { Kafka, UsageEvent, UsageEventPublisher } from '@gw/kafka';
import { create, eventsv1 } from '@gw/proto';
import type { Context } from '@opentelemetry/api';
import { Gauge, traceLogFields } from '@gw/telemetry';
import type { Logger, Registry } from '@gw/telemetry';
import type { IngressConfig } from '../config';
import type { SettleDeps } from '../pipeline/types';
import type { EdgeMetrics } from '../telemetry/edge-metrics';
import { sendUsageTraced } from '../telemetry/request-tracing';

/**
 * USAGE_SPOOL_DIR, else a directory per HTTP port under the system temp directory, so that two
 * ingresses on one machine never share a spool. In Kubernetes set it to a mounted volume: the
 * container's own file system does not survive a container restart.
 */
export function usageSpoolDir(config: Pick<IngressConfig, 'USAGE_SPOOL_DIR' | 'HTTP_PORT'>): string {
  return config.USAGE_SPOOL_DIR ?? join(tmpdir(), `gateway-usage-spool-${config.HTTP_PORT}`);
}

/**
 * How long a stop waits for Kafka to take a delivery in flight and for the producer to close; not at
 * all while Kafka is known to be away (the spool keeps the events for the next start).
 */
const usageSpoolStopMs = 2_000;

/**
 * Usage events go to a local durable spool first, then to Kafka; `acknowledged` runs for each event
 * Kafka took. Should another process take the spool's lock, this one stops (SIGTERM to itself, so
 * that it shuts down as usual): two writers must never share a spool.
 */
export function createUsagePublisher(
  kafka: Kafka,
  config: IngressConfig,
  logger: Logger,
  acknowledged: () => void,
): DurableUsagePublisher {
  const log = logger.child({ component: 'usage-spool' });
  const producer = new UsageEventProducer(kafka, { topic: config.USAGE_TOPIC });
  const counted: UsageEventPublisher = {
    connect: () => producer.connect(),
    send: (event) => producer.send(event).then(acknowledged),
    disconnect: () => producer.disconnect(),
  };
  return new DurableUsagePublisher(counted, {
    dir: usageSpoolDir(config),
    maxBytes: config.USAGE_SPOOL_MAX_BYTES,
    stopTimeoutMs: usageSpoolStopMs,
    drainOnStopMs: config.USAGE_SPOOL_DRAIN_MS,
    onLockLost: (reason) => {
      log.fatal({ reason }, 'usage spool lock taken by another process: stopping');
      process.kill(process.pid, 'SIGTERM');
    },
    log: (level, message, fields) => log[level](fields, message),
  });
}

/**
 * The usage stage's two records per request in the spool: the provisional one as the request goes
 * upstream, then the final one, whose durability releases the provisional one. A provisional record the
 * spool did not take is logged, and the request's answer then ends only once its final record is durable.
 */
export function requestUsageRecorder(
  publisher: Pick<DurableUsagePublisher, 'begin' | 'send'>,
  topic: string,
  logger: Logger,
  metrics: Pick<EdgeMetrics, 'usageHanded' | 'usageDurable'>,
): SettleDeps['beginUsage'] {
  return (provisionalEvent, request) => {
    const provisional = publisher.begin(create(eventsv1.UsageEventSchema, provisionalEvent));
    const provisionalDurable = provisional.durable.then(
      () => true,
      (error: unknown) => {
        logUsageNotRecorded(logger, provisionalEvent, error, request.traceContext, 'provisional');
        return false;
      },
    );
    return {
      provisionalDurable,
      finish: (event) => {
        metrics.usageHanded();
        return sendUsageTraced(event, topic, request.traceContext, (traced) =>
          publisher.send(create(eventsv1.UsageEventSchema, traced), provisional),
        ).then(metrics.usageDurable, (error: unknown) =>
          logUsageNotRecorded(logger, event, error, request.traceContext),
        );
      },
    };
  };
}

/**
 * An event the spool did not take: logged by ids (with its request's trace ids, if traced), never by
 * content. A provisional record lost only means the end of the answer waits for the final one.
 */
export function logUsageNotRecorded(
  logger: Logger,
  event: Partial<Pick<UsageEvent, 'eventId' | 'accountId' | 'keyId'>>,
  error: unknown,
  requestContext?: Context,
  record: 'final' | 'provisional' = 'final',
): void {
  const what = record === 'final' ? 'usage event not recorded' : 'provisional usage record not written';
  const ids = {
    request_id: event.eventId,
    account_id: event.accountId,
    key_id: event.keyId,
    ...traceLogFields(requestContext),
  };
  if (error instanceof SpoolFullError) {
    logger.error({ ...ids, pending_bytes: error.pendingBytes, max_bytes: error.maxBytes }, `usage spool full: ${what}`);
  } else {
    logger.error({ ...ids, err: error }, what);
  }
}

/** Depth of the spool, and whether it can take events, read at each scrape. */
export function registerUsageSpoolMetrics(
  registry: Registry,
  publisher: Pick<DurableUsagePublisher, 'depth' | 'acceptsEvents'>,
): void {
  new Gauge({
    name: 'gateway_billing_available',
    help:
      '1 while the usage spool takes events; 0 while it is full, its disk refuses writes or its lock is lost, ' +
      'and live requests are refused (503).',
    registers: [registry],
    collect() {
      this.set(publisher.acceptsEvents() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'gateway_usage_spool_events',
    help: 'Usage events kept in the local spool that Kafka has not acknowledged yet.',
    registers: [registry],
    collect() {
      this.set(publisher.depth().events);
    },
  });
  new Gauge({
    name: 'gateway_usage_spool_bytes',
    help:
      'Bytes of the usage events Kafka has not acknowledged yet, and of the provisional usage records not yet ' +
      'passed; USAGE_SPOOL_MAX_BYTES caps it.',
    registers: [registry],
    collect() {
      this.set(publisher.depth().bytes);
    },
  });
}
