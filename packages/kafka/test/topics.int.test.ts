import { randomBytes } from 'node:crypto';
import { readKafkaSecurity } from '@gw/config';
import { testInfraEnv } from '@gw/testing';
import { createKafka, ensureTopics, MissingTopicError, PartitionCountMismatchError, requireTopic } from '../src';

describe('ensureTopics against a real broker', () => {
  const infra = testInfraEnv();
  const kafka = createKafka({
    brokers: infra.KAFKA_BROKERS!.split(','),
    clientId: 'topics-test',
    log: () => undefined,
    security: readKafkaSecurity(infra),
  });
  const topic = `gateway.usage.v1.test-topics-${randomBytes(4).toString('hex')}`;

  async function partitionsOf(name: string): Promise<number> {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: [name] });
      return topics[0]!.partitions.length;
    } finally {
      await admin.disconnect();
    }
  }

  afterAll(async () => {
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  });

  it('creates a missing topic, accepts it as it is, and never changes its partition count', async () => {
    expect(await ensureTopics(kafka, [{ topic, numPartitions: 3 }])).toEqual([
      { topic, partitions: 3, change: 'created' },
    ]);
    expect(await ensureTopics(kafka, [{ topic, numPartitions: 3 }])).toEqual([
      { topic, partitions: 3, change: 'none' },
    ]);

    // More partitions would move accounts to other partitions: refused, and the topic is left as it is.
    const more = ensureTopics(kafka, [{ topic, numPartitions: 6 }]);
    await expect(more).rejects.toBeInstanceOf(PartitionCountMismatchError);
    await expect(more).rejects.toThrow(`topic ${topic} has 3 partitions, the gateway expects 6`);
    expect(await partitionsOf(topic)).toBe(3);

    await expect(ensureTopics(kafka, [{ topic, numPartitions: 2 }])).rejects.toThrow(
      /never changed automatically.*Repartitioning the usage topic/,
    );
    expect(await partitionsOf(topic)).toBe(3);
  }, 60_000);

  it('tells a missing topic apart, naming what creates it', async () => {
    const missing = requireTopic(kafka, `${topic}-never-created`);
    await expect(missing).rejects.toBeInstanceOf(MissingTopicError);
    await expect(missing).rejects.toThrow(/does not exist on Kafka: create it first \(the Helm chart's topic Job/);
    await ensureTopics(kafka, [{ topic, numPartitions: 3 }]);
    await expect(requireTopic(kafka, topic)).resolves.toBeUndefined();
  }, 60_000);
});
