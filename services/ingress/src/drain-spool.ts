import { z } from 'zod';
import { env, readEnv, runOrExit } from '@gw/config';
import { createKafka, DurableUsagePublisher, UsageEventProducer } from '@gw/kafka';
import { createLogger } from '@gw/telemetry';

/**
 * Delivers the usage spool of an ingress that is gone (a volume its StatefulSet kept after a scale-in) to
 * Kafka, then exits: 0 once the spool is empty, 1 if events are left (Kafka away; the sweeper tries again).
 * The spool's lock keeps a returning ingress pod off the volume meanwhile, and the event id stays the key,
 * so nothing is counted twice. Run by the spool sweeper's Jobs (spool-sweeper.ts) in the ingress image.
 */
const schema = z.object({
  LOG_LEVEL: env.logLevel(),
  KAFKA_BROKERS: env.list('127.0.0.1:9092'),
  USAGE_TOPIC: z.string().min(1).default('gateway.usage.v1'),
  USAGE_SPOOL_DIR: z.string().min(1, 'expected the spool directory'),
  /** Longest the delivery may take, while Kafka takes events. */
  USAGE_SPOOL_DRAIN_MS: env.positiveInt(600_000),
});

void runOrExit(async () => {
  const config = readEnv(schema);
  const logger = createLogger('ingress-spool-drain', config.LOG_LEVEL);
  const kafka = createKafka({
    brokers: config.KAFKA_BROKERS,
    clientId: 'ingress-spool-drain',
    log: (level, message, fields) => logger[level](fields, message),
  });
  const publisher = new DurableUsagePublisher(new UsageEventProducer(kafka, { topic: config.USAGE_TOPIC }), {
    dir: config.USAGE_SPOOL_DIR,
    drainOnStopMs: config.USAGE_SPOOL_DRAIN_MS,
    // The first attempt may find Kafka still connecting: a failed batch ends the drain, so give it time.
    stopTimeoutMs: 30_000,
    log: (level, message, fields) => logger[level](fields, message),
  });
  await publisher.connect();
  const found = publisher.depth();
  await publisher.disconnect();
  const left = publisher.depth();
  logger.info(
    { found_events: found.events, left_events: left.events, dir: config.USAGE_SPOOL_DIR },
    left.events === 0 ? 'spool delivered' : 'spool not delivered whole',
  );
  process.exit(left.events === 0 ? 0 : 1);
});
