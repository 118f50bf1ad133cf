import type { Kafka } from 'kafkajs';

/** Usage events: key = account id, value = gateway.events.v1.UsageEvent (protobuf binary). */
export const usageTopic = 'gateway.usage.v1';
export const usageTopicPartitions = 6;

export interface TopicSpec {
  topic: string;
  numPartitions: number;
}

export interface TopicState {
  topic: string;
  partitions: number;
  change: 'created' | 'none';
}

/**
 * A topic exists with another partition count than the gateway expects. Never corrected
 * automatically: the partition of an account is its key's hash modulo the count, so a new count
 * moves accounts to other partitions while their earlier events wait in the old ones, and the
 * consumer would see an account's events out of order.
 */
export class PartitionCountMismatchError extends Error {
  override name = 'PartitionCountMismatchError';

  constructor(
    readonly topic: string,
    readonly actual: number,
    readonly expected: number,
  ) {
    super(
      `topic ${topic} has ${actual} partitions, the gateway expects ${expected}; partition counts are never ` +
        'changed automatically, because that moves accounts to other partitions and breaks the order of their ' +
        'usage events (to repartition, see "Repartitioning the usage topic" in services/metering/README.md)',
    );
  }
}

/**
 * Creates the topics that do not exist; an existing topic must have the partition count asked for,
 * else PartitionCountMismatchError (nothing is changed). Safe to run again.
 */
export async function ensureTopics(kafka: Kafka, specs: readonly TopicSpec[]): Promise<TopicState[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const present = specs.filter((spec) => existing.has(spec.topic));
    const metadata =
      present.length > 0 ? (await admin.fetchTopicMetadata({ topics: present.map((spec) => spec.topic) })).topics : [];
    // Checked before anything is created: a refused run changes nothing.
    for (const spec of present) {
      const partitions = metadata.find((topic) => topic.name === spec.topic)?.partitions.length ?? 0;
      if (partitions !== spec.numPartitions) {
        throw new PartitionCountMismatchError(spec.topic, partitions, spec.numPartitions);
      }
    }
    const missing = specs.filter((spec) => !existing.has(spec.topic));
    if (missing.length > 0) {
      await admin.createTopics({
        topics: missing.map(({ topic, numPartitions }) => ({ topic, numPartitions })),
        waitForLeaders: true,
      });
    }
    return specs.map(({ topic, numPartitions }) => ({
      topic,
      partitions: numPartitions,
      change: existing.has(topic) ? 'none' : 'created',
    }));
  } finally {
    await admin.disconnect();
  }
}

/**
 * The usage topic is missing. Metering would crash-loop on UNKNOWN_TOPIC_OR_PARTITION without saying what
 * to do; this says it.
 */
export class MissingTopicError extends Error {
  override name = 'MissingTopicError';

  constructor(readonly topic: string) {
    super(
      `topic ${topic} does not exist on Kafka: create it first (the Helm chart's topic Job does, ` +
        'kafka.topicJob; or run packages/kafka/dist/ensure-topics-cli.js with KAFKA_BROKERS and USAGE_TOPIC)',
    );
  }
}

/** Rejects with MissingTopicError when the broker does not have the topic (other failures as they come). */
export async function requireTopic(kafka: Kafka, topic: string): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    if (!(await admin.listTopics()).includes(topic)) throw new MissingTopicError(topic);
  } finally {
    await admin.disconnect();
  }
}
