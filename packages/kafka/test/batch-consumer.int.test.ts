import { randomBytes } from 'node:crypto';
import { readKafkaSecurity } from '@gw/config';
import { testInfraEnv, waitUntil } from '@gw/testing';
import { createKafka, ensureTopics, startBatchConsumer } from '../src';
import type { MessageChunk, RunningConsumer } from '../src';

describe('the batch consumer against a real broker', () => {
  const infra = testInfraEnv();
  const kafka = createKafka({
    brokers: infra.KAFKA_BROKERS!.split(','),
    clientId: 'batch-consumer-test',
    log: () => undefined,
    security: readKafkaSecurity(infra),
  });
  const topic = `gateway.usage.v1.test-consumer-${randomBytes(4).toString('hex')}`;
  let running: RunningConsumer | undefined;

  afterAll(async () => {
    await running?.stop();
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  });

  it('replaces a consumer kafkajs gave up on, and the chunk it failed on is delivered again', async () => {
    await ensureTopics(kafka, [{ topic, numPartitions: 1 }]);
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic,
      messages: [
        { key: 'a', value: 'first' },
        { key: 'b', value: 'second' },
      ],
    });
    await producer.disconnect();

    const delivered: string[][] = [];
    const crashes: { message: string; restartInMs: number }[] = [];
    running = await startBatchConsumer(kafka, {
      groupId: `batch-consumer-test-${randomBytes(4).toString('hex')}`,
      topic,
      restartBackoff: { initialMs: 200, maxMs: 1_000 },
      processChunk: async (chunk: MessageChunk) => {
        delivered.push(chunk.messages.map((message) => message.value?.toString() ?? ''));
        // The first delivery fails the way kafkajs does not retry (its own "not implemented" bail):
        // the consumer stops for good, as after a refused authentication.
        if (delivered.length === 1) {
          throw Object.assign(new Error('a failure kafkajs does not retry'), { name: 'KafkaJSNotImplemented' });
        }
      },
      onCrash: (error, restartInMs) => crashes.push({ message: error.message, restartInMs }),
    });

    await waitUntil(() => delivered.length >= 2, { what: 'the chunk delivered to a new consumer', timeoutMs: 30_000 });
    expect(crashes).toHaveLength(1);
    expect(crashes[0]!.restartInMs).toBe(200);
    // Nothing was committed for the failed chunk: the new member starts from it again.
    expect(delivered[0]).toEqual(['first', 'second']);
    expect(delivered[1]).toEqual(['first', 'second']);
  }, 60_000);
});
