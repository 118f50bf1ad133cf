import { ConfigError, readKafkaSecurity } from '@gw/config';
import type { KafkaSecurity } from '@gw/config';
import { createKafka } from './client';
import { ensureTopics, usageTopic, usageTopicPartitions } from './topics';

// Used by deploy/local/infra.sh and the chart's topic Job: creates the usage topic (USAGE_TOPIC, else the
// gateway's default name) on KAFKA_BROKERS (comma list), or checks the partition count of the one there, with
// the KAFKA_TLS* and KAFKA_SASL_* settings the services read.
const brokers = (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092')
  .split(',')
  .map((broker) => broker.trim())
  .filter((broker) => broker.length > 0);

let security: KafkaSecurity;
try {
  security = readKafkaSecurity();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(2);
}

const kafka = createKafka({
  brokers,
  security,
  clientId: 'gateway-ensure-topics',
  log: (level, message) => {
    if (level === 'error' || level === 'warn') process.stderr.write(`kafka ${level}: ${message}\n`);
  },
});

const topic = process.env.USAGE_TOPIC?.trim() || usageTopic;

ensureTopics(kafka, [{ topic, numPartitions: usageTopicPartitions }]).then(
  (states) => {
    for (const { topic, partitions, change } of states) {
      process.stdout.write(`topic ${topic}: ${partitions} partitions${change === 'none' ? '' : ` (${change})`}\n`);
    }
  },
  (error: unknown) => {
    process.stderr.write(`creating topics on ${brokers.join(',')} failed: ${(error as Error).message}\n`);
    process.exit(1);
  },
);
