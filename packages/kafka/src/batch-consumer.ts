import type { Kafka } from 'kafkajs';

export interface ReceivedMessage {
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  /** The W3C trace context of the span that produced the message (its traceparent header), if any. */
  traceparent?: string;
}

/** Consecutive messages of one partition. */
export interface MessageChunk {
  topic: string;
  partition: number;
  messages: ReceivedMessage[];
  /** The offset to resume from once this chunk is processed: its last offset + 1. */
  nextOffset: string;
  /** The partition's end (the offset its next message will get) when the batch was fetched: the lag is the difference. */
  highWatermark: string;
}

export interface BatchConsumerOptions {
  groupId: string;
  topic: string;
  /**
   * Stores a chunk's effects durably (with nextOffset, for exactly-once effects). Its offsets are
   * committed to Kafka only after it resolves; when it throws, the chunk is delivered again.
   */
  processChunk(chunk: MessageChunk): Promise<void>;
  /** Called when the consumer has stopped for good: kafkajs gave up restarting it. */
  onCrash(error: Error): void;
  /** Most messages per processChunk call; the group heartbeat is sent between chunks. */
  chunkSize?: number;
  /**
   * How long the group coordinator waits for a silent member before it gives the member's partitions
   * to the others: after a SIGKILL, the replacement resumes this long after the kill at the latest.
   * 6 s, the broker's default minimum (group.min.session.timeout.ms). A chunk must be stored within it.
   */
  sessionTimeoutMs?: number;
}

export interface RunningConsumer {
  /** Finishes the chunk in progress, leaves the group and disconnects. */
  stop(): Promise<void>;
}

/**
 * Consumes a topic in chunks with manual offset management: a chunk's offsets are resolved and
 * committed only after processChunk has stored its effects, so a crash or rebalance at any point
 * redelivers, never skips. A new group starts from the earliest offset.
 */
export async function startBatchConsumer(kafka: Kafka, options: BatchConsumerOptions): Promise<RunningConsumer> {
  const chunkSize = options.chunkSize ?? 500;
  const sessionTimeout = options.sessionTimeoutMs ?? 6_000;
  // kafkajs heartbeats between fetches only (no background thread): an idle fetch waits at most a
  // sixth of the session, and the heartbeat goes every sixth, so that a live member never expires.
  const beat = Math.max(500, Math.floor(sessionTimeout / 6));
  const consumer = kafka.consumer({
    groupId: options.groupId,
    allowAutoTopicCreation: false,
    sessionTimeout,
    heartbeatInterval: beat,
    maxWaitTimeInMs: beat,
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (!payload.restart) options.onCrash(payload.error);
  });

  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [options.topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        for (let start = 0; start < batch.messages.length; start += chunkSize) {
          // Stopping, or the partition was revoked or sought: the rest is delivered again later.
          if (!isRunning() || isStale()) return;
          const messages = batch.messages.slice(start, start + chunkSize);
          const lastOffset = messages[messages.length - 1]!.offset;
          const nextOffset = (BigInt(lastOffset) + 1n).toString();
          await options.processChunk({
            topic: batch.topic,
            partition: batch.partition,
            messages: messages.map(({ offset, key, value, headers }) => ({
              offset,
              key,
              value,
              traceparent: headers?.traceparent?.toString(),
            })),
            nextOffset,
            highWatermark: batch.highWatermark,
          });
          resolveOffset(lastOffset);
          await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: nextOffset }]);
          await heartbeat();
        }
      },
    });
  } catch (error) {
    await consumer.disconnect().catch(() => undefined);
    throw error;
  }
  return { stop: () => consumer.disconnect() };
}
