import type { Kafka, Message, Producer } from 'kafkajs';
import { eventsv1, toBinary } from '@gw/proto';
import { keyHashPartitioner } from './client';
import { usageTopic } from './topics';

export type UsageEvent = eventsv1.UsageEvent;

/**
 * What the gateway needs from a usage-event sink. Small on purpose: a durable buffer in front of
 * Kafka can implement the same three calls.
 */
export interface UsageEventPublisher {
  connect(): Promise<void>;
  /** Resolves once Kafka has acknowledged the event on all in-sync replicas. */
  send(event: UsageEvent): Promise<void>;
  /** Waits for the sends already accepted, then closes. */
  disconnect(): Promise<void>;
}

export interface UsageEventProducerOptions {
  topic?: string;
  /** Most events in one produce request. */
  maxBatchSize?: number;
  /**
   * Attempts after the first before a send rejects. kafkajs retries an idempotent producer
   * forever by default, which would hold every later send behind a broker outage.
   */
  retries?: number;
}

interface PendingSend {
  message: Message;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Publishes usage events with an idempotent producer (acks from all in-sync replicas, one request
 * in flight). Sends go through a single queue: kafkajs' idempotent producer has lost or reordered
 * concurrent sends (kafkajs issues #598, #1005), so one produce request runs at a time, carrying
 * every event queued meanwhile. Key = account id, so one account's events stay in order.
 */
export class UsageEventProducer implements UsageEventPublisher {
  private readonly topic: string;
  private readonly maxBatchSize: number;
  private readonly retries: number;
  private readonly queue: PendingSend[] = [];
  /** The connected (or connecting) producer; replaced after a failed send. */
  private producer: Promise<Producer> | undefined;
  private draining: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly kafka: Kafka,
    options: UsageEventProducerOptions = {},
  ) {
    this.topic = options.topic ?? usageTopic;
    this.maxBatchSize = options.maxBatchSize ?? 500;
    this.retries = options.retries ?? 8;
  }

  async connect(): Promise<void> {
    await this.connectedProducer();
  }

  send(event: UsageEvent): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the usage event producer is disconnected'));
    const message: Message = {
      key: event.accountId,
      value: Buffer.from(toBinary(eventsv1.UsageEventSchema, event)),
      // The producing span's context in the standard header, for the consumer's span to link to.
      ...(event.traceparent !== '' && { headers: { traceparent: event.traceparent } }),
    };
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ message, resolve, reject });
      this.draining ??= this.drain();
    });
  }

  async disconnect(): Promise<void> {
    this.closed = true;
    await this.draining;
    await this.discardProducer();
  }

  private async drain(): Promise<void> {
    // Lets the caller store this promise before the loop can finish, and lets the sends of the
    // current tick share the first request.
    await Promise.resolve();
    while (this.queue.length > 0) {
      await this.sendBatch(this.queue.splice(0, this.maxBatchSize));
    }
    this.draining = undefined;
  }

  private async sendBatch(batch: PendingSend[]): Promise<void> {
    try {
      const producer = await this.connectedProducer();
      await producer.send({ topic: this.topic, acks: -1, messages: batch.map((pending) => pending.message) });
      for (const pending of batch) pending.resolve();
    } catch (error) {
      // After a failed send the idempotent producer's sequence numbers may be out of step with the
      // broker (kafkajs #598); the next batch gets a fresh producer id instead.
      await this.discardProducer();
      for (const pending of batch) pending.reject(error);
    }
  }

  private connectedProducer(): Promise<Producer> {
    if (!this.producer) {
      const opening = this.openProducer();
      this.producer = opening;
      // A failed connection is forgotten, so the next call tries again.
      opening.catch(() => {
        if (this.producer === opening) this.producer = undefined;
      });
    }
    return this.producer;
  }

  private async openProducer(): Promise<Producer> {
    const producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: keyHashPartitioner,
      retry: { retries: this.retries },
    });
    await producer.connect();
    return producer;
  }

  private async discardProducer(): Promise<void> {
    const producer = this.producer;
    this.producer = undefined;
    const connected = await producer?.catch(() => undefined);
    await connected?.disconnect().catch(() => undefined);
  }
}
