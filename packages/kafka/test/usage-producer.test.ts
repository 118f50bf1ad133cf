import type { Kafka, Producer, ProducerConfig, ProducerRecord } from 'kafkajs';
import { create, eventsv1, fromBinary } from '@gw/proto';
import { UsageEventProducer, usageTopic } from '../src';

/** A stand-in for kafkajs: records each producer and each send, and lets the test settle sends. */
class FakeKafka {
  readonly producers: FakeProducer[] = [];

  producer(config: ProducerConfig): Producer {
    const producer = new FakeProducer(config);
    this.producers.push(producer);
    return producer as unknown as Producer;
  }

  asKafka(): Kafka {
    return this as unknown as Kafka;
  }
}

class FakeProducer {
  readonly sends: { record: ProducerRecord; settle: (error?: Error) => void }[] = [];
  inFlight = 0;
  maxInFlight = 0;
  disconnected = false;

  constructor(readonly config: ProducerConfig) {}

  async connect(): Promise<void> {}

  async disconnect(): Promise<void> {
    this.disconnected = true;
  }

  send(record: ProducerRecord): Promise<void> {
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    return new Promise((resolve, reject) => {
      this.sends.push({
        record,
        settle: (error) => {
          this.inFlight -= 1;
          if (error) reject(error);
          else resolve();
        },
      });
    });
  }
}

const event = (eventId: string, accountId = 'acct_1') => create(eventsv1.UsageEventSchema, { eventId, accountId });

/** Lets queued promise callbacks run. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('UsageEventProducer', () => {
  it('uses an idempotent producer with one request in flight and bounded retries', async () => {
    const kafka = new FakeKafka();
    await new UsageEventProducer(kafka.asKafka()).connect();
    expect(kafka.producers[0]!.config).toMatchObject({
      idempotent: true,
      maxInFlightRequests: 1,
      retry: { retries: 8 },
    });
  });

  it('keys each event by account and sends its protobuf binary with acks from all replicas', async () => {
    const kafka = new FakeKafka();
    const producer = new UsageEventProducer(kafka.asKafka());
    const sent = producer.send(event('req_1', 'acct_9'));
    await settled();
    const [{ record, settle }] = kafka.producers[0]!.sends as [FakeProducer['sends'][number]];
    expect(record).toMatchObject({ topic: usageTopic, acks: -1 });
    const [message] = record.messages;
    expect(message!.key).toBe('acct_9');
    expect(fromBinary(eventsv1.UsageEventSchema, message!.value as Buffer).eventId).toBe('req_1');
    settle();
    await expect(sent).resolves.toBeUndefined();
  });

  it('sends one request at a time, carrying every event queued meanwhile', async () => {
    const kafka = new FakeKafka();
    const producer = new UsageEventProducer(kafka.asKafka(), { topic: 'usage.test' });
    const first = producer.send(event('a'));
    await settled();
    const later = [producer.send(event('b')), producer.send(event('c'))];
    await settled();
    const fake = kafka.producers[0]!;
    expect(fake.sends).toHaveLength(1);

    fake.sends[0]!.settle();
    await first;
    await settled();
    expect(fake.sends).toHaveLength(2);
    expect(fake.sends[1]!.record.messages.map((message) => message.key)).toEqual(['acct_1', 'acct_1']);
    fake.sends[1]!.settle();
    await Promise.all(later);
    expect(fake.maxInFlight).toBe(1);
  });

  it('rejects the sends of a failed request and uses a fresh producer for the next one', async () => {
    const kafka = new FakeKafka();
    const producer = new UsageEventProducer(kafka.asKafka());
    const failed = producer.send(event('a'));
    await settled();
    kafka.producers[0]!.sends[0]!.settle(new Error('broker gone'));
    await expect(failed).rejects.toThrow('broker gone');
    expect(kafka.producers[0]!.disconnected).toBe(true);

    const retried = producer.send(event('a'));
    await settled();
    expect(kafka.producers).toHaveLength(2);
    kafka.producers[1]!.sends[0]!.settle();
    await expect(retried).resolves.toBeUndefined();
  });

  it('finishes the accepted sends before disconnecting, and refuses sends after', async () => {
    const kafka = new FakeKafka();
    const producer = new UsageEventProducer(kafka.asKafka());
    const sent = producer.send(event('a'));
    await settled();
    const disconnected = producer.disconnect();
    await settled();
    expect(kafka.producers[0]!.disconnected).toBe(false);
    kafka.producers[0]!.sends[0]!.settle();
    await Promise.all([sent, disconnected]);
    expect(kafka.producers[0]!.disconnected).toBe(true);
    await expect(producer.send(event('b'))).rejects.toThrow('disconnected');
  });
});
