import type { Kafka } from 'kafkajs';

/** Usage events: key = account id, value = gateway.events.v1.UsageEvent (protobuf binary). */
export const usageTopic = 'gateway.usage.v1';
export const usageTopicPartitions = 6;

export interface TopicSpec {
  topic: string;
  numPartitions: number;
}

/** Every topic the gateway uses, as the local stack creates them. */
export const gatewayTopics: readonly TopicSpec[] = [{ topic: usageTopic, numPartitions: usageTopicPartitions }];

export interface TopicState {
  topic: string;
  partitions: number;
  change: 'created' | 'partitions-added' | 'none';
}

/**
 * Creates the topics that do not exist and adds partitions to those that have fewer than asked
 * (Kafka cannot remove partitions, so more than asked is left alone). Safe to run again.
 */
export async function ensureTopics(kafka: Kafka, specs: readonly TopicSpec[]): Promise<TopicState[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = specs.filter((spec) => !existing.has(spec.topic));
    if (missing.length > 0) {
      await admin.createTopics({
        topics: missing.map(({ topic, numPartitions }) => ({ topic, numPartitions })),
        waitForLeaders: true,
      });
    }
    const present = specs.filter((spec) => existing.has(spec.topic));
    const metadata =
      present.length > 0 ? (await admin.fetchTopicMetadata({ topics: present.map((spec) => spec.topic) })).topics : [];

    const states: TopicState[] = missing.map(({ topic, numPartitions }) => ({
      topic,
      partitions: numPartitions,
      change: 'created',
    }));
    for (const spec of present) {
      const partitions = metadata.find((topic) => topic.name === spec.topic)?.partitions.length ?? 0;
      if (partitions < spec.numPartitions) {
        await admin.createPartitions({ topicPartitions: [{ topic: spec.topic, count: spec.numPartitions }] });
        states.push({ topic: spec.topic, partitions: spec.numPartitions, change: 'partitions-added' });
      } else {
        states.push({ topic: spec.topic, partitions, change: 'none' });
      }
    }
    return states;
  } finally {
    await admin.disconnect();
  }
}
