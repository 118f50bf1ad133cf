import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readKafkaSecurity } from '@gw/config';
import type { KafkaSecurity } from '@gw/config';
import { create, eventsv1, fromBinary } from '@gw/proto';
import { testInfraEnv, waitUntil } from '@gw/testing';
import { createKafka, DurableUsagePublisher, ensureTopics, UsageEventProducer } from '../src';
import type { Kafka, KafkaLog } from '../src';

/** The test infrastructure's brokers and their TLS and SASL settings. */
function kafkaConnection(): { brokers: string[]; security: KafkaSecurity } {
  const infra = testInfraEnv();
  return { brokers: infra.KAFKA_BROKERS!.split(','), security: readKafkaSecurity(infra) };
}

const quiet: KafkaLog = () => undefined;

/** Message ids read back from a topic, by key, in partition order. */
async function readBack(kafka: Kafka, topic: string, count: number): Promise<{ key: string; eventId: string }[]> {
  const received: { key: string; eventId: string }[] = [];
  const consumer = kafka.consumer({ groupId: `${topic}-reader` });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        const event = fromBinary(eventsv1.UsageEventSchema, message.value!);
        received.push({ key: message.key!.toString(), eventId: event.eventId });
      },
    });
    await waitUntil(() => received.length >= count, { what: `${count} events received`, timeoutMs: 30_000 });
  } finally {
    await consumer.disconnect();
  }
  return received;
}

/** Messages on the topic, from its partitions' offsets (no transactions: one offset per message). */
async function messageCount(kafka: Kafka, topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    return offsets.reduce((sum, partition) => sum + Number(partition.high), 0);
  } finally {
    await admin.disconnect();
  }
}

/**
 * A process that sends `count` events through a publisher whose broker is unreachable, prints
 * "durable" once every send() has resolved, then keeps retrying until it is killed.
 */
const crashingProducer = `
const { join } = require('node:path');
const [kafkaDir, dir, topic, prefix, count] = process.argv.slice(1);
const { createKafka, DurableUsagePublisher, UsageEventProducer } = require(join(kafkaDir, 'dist'));
const { create, eventsv1 } = require(join(kafkaDir, 'node_modules', '@gw/proto'));
const kafka = createKafka({ brokers: ['127.0.0.1:1'], clientId: 'spool-test-crash', log: () => undefined });
const publisher = new DurableUsagePublisher(new UsageEventProducer(kafka, { topic, retries: 0 }), { dir, retryInitialMs: 50, retryMaxMs: 200 });
publisher.connect().then(async () => {
  const sends = [];
  for (let index = 0; index < Number(count); index += 1) {
    sends.push(publisher.send(create(eventsv1.UsageEventSchema, { eventId: prefix + index, accountId: 'acct_' + (index % 3) })));
  }
  await Promise.all(sends);
  process.stdout.write('durable\\n');
});
`;

describe('DurableUsagePublisher against a real Kafka broker', () => {
  const suffix = randomBytes(4).toString('hex');
  const topic = `gateway.usage.v1.test-spool-${suffix}`;
  const crashTopic = `gateway.usage.v1.test-spool-crash-${suffix}`;
  const kafka: Kafka = createKafka({ ...kafkaConnection(), clientId: 'spool-test', log: quiet });
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'durable-publisher-int-'));
    await ensureTopics(kafka, [
      { topic, numPartitions: 3 },
      { topic: crashTopic, numPartitions: 3 },
    ]);
  });

  afterAll(async () => {
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [topic, crashTopic] }).catch(() => undefined);
    await admin.disconnect();
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps the events sent while the broker is unreachable and a later instance delivers every one', async () => {
    const sent = Array.from({ length: 300 }, (_, index) =>
      create(eventsv1.UsageEventSchema, {
        eventId: `req_${suffix}_${String(index).padStart(3, '0')}`,
        accountId: `acct_${index % 7}`,
        model: 'claude-sonnet',
        inputTokens: BigInt(index),
      }),
    );

    // A broker address nothing listens on.
    const lines: string[] = [];
    const deadKafka = createKafka({ brokers: ['127.0.0.1:1'], clientId: 'spool-test-dead', log: quiet });
    const first = new DurableUsagePublisher(new UsageEventProducer(deadKafka, { topic, retries: 0 }), {
      dir,
      segmentBytes: 8 * 1024,
      retryInitialMs: 50,
      retryMaxMs: 200,
      log: (_level, message) => lines.push(message),
    });
    await first.connect();
    await Promise.all(sent.map((event) => first.send(event)));
    await waitUntil(() => lines.some((line) => /Kafka unavailable/.test(line)), {
      what: 'a log line saying Kafka is unavailable',
      timeoutMs: 10_000,
    });
    expect(first.depth().events).toBe(300);
    await first.disconnect();
    expect((await readdir(dir)).filter((name) => name.endsWith('.spool')).length).toBeGreaterThan(1);

    const second = new DurableUsagePublisher(new UsageEventProducer(kafka, { topic }), { dir, log: quiet });
    await second.connect();
    expect(second.depth().events).toBe(300);
    await waitUntil(
      () => second.depth(),
      { what: 'an empty spool', timeoutMs: 30_000 },
      (depth) => depth.events === 0 && depth.bytes === 0,
    );
    await second.disconnect();
    expect(await readdir(dir)).toEqual([]);

    // Exactly 300 messages on the topic: none lost, none twice.
    expect(await messageCount(kafka, topic)).toBe(300);
    const received = await readBack(kafka, topic, 300);
    expect(received.map((entry) => entry.eventId).sort()).toEqual(sent.map((event) => event.eventId).sort());
    // Keyed by account, and each account's events in the order they were sent.
    for (let account = 0; account < 7; account += 1) {
      const key = `acct_${account}`;
      expect(received.filter((entry) => entry.key === key).map((entry) => entry.eventId)).toEqual(
        sent.filter((event) => event.accountId === key).map((event) => event.eventId),
      );
    }
  });

  it('delivers the events of a producing process killed with SIGKILL', async () => {
    const crashDir = join(dir, 'crashed');
    const prefix = `req_${suffix}_crash_`;
    const child = spawn(
      process.execPath,
      ['-e', crashingProducer, join(__dirname, '..'), crashDir, crashTopic, prefix, '200'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await waitUntil(() => output.includes('durable'), { what: 'the output to say durable', timeoutMs: 20_000 });
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;

    // The lock names the killed process; the new instance takes the spool over.
    const publisher = new DurableUsagePublisher(new UsageEventProducer(kafka, { topic: crashTopic }), {
      dir: crashDir,
      log: quiet,
    });
    await publisher.connect();
    expect(publisher.depth().events).toBe(200);
    await waitUntil(() => publisher.depth().events === 0, { what: 'an empty spool', timeoutMs: 30_000 });
    await publisher.disconnect();

    expect(await messageCount(kafka, crashTopic)).toBe(200);
    const received = await readBack(kafka, crashTopic, 200);
    expect(received.map((entry) => entry.eventId).sort()).toEqual(
      Array.from({ length: 200 }, (_, index) => `${prefix}${index}`).sort(),
    );
  });
});
