import type { Consumer, Kafka } from 'kafkajs';

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
  /**
   * Called when kafkajs gave up on the consumer (a failure it does not retry, such as a refused
   * authentication while a broker restarts): a new consumer joins the group after restartInMs.
   */
  onCrash(error: Error, restartInMs: number): void;
  /** The first and the longest wait before a crashed consumer is replaced; 1 s and 30 s. */
  restartBackoff?: { initialMs: number; maxMs: number };
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
 *
 * The consumer outlives what kafkajs gives up on: when kafkajs stops a consumer for good, a new one
 * joins the group after a capped backoff, so that a broker that comes back with a hiccup (a refused
 * authentication while its credentials load) never leaves usage unconsumed until someone restarts
 * the process. The first start still fails the caller, which has nothing to serve without it.
 */
export async function startBatchConsumer(kafka: Kafka, options: BatchConsumerOptions): Promise<RunningConsumer> {
  const backoff = options.restartBackoff ?? { initialMs: 1_000, maxMs: 30_000 };
  let current: Consumer | undefined;
  let stopped = false;
  let restartTimer: NodeJS.Timeout | undefined;
  let waitMs = backoff.initialMs;

  const replace = (error: Error): void => {
    if (stopped) return;
    options.onCrash(error, waitMs);
    const delay = waitMs;
    waitMs = Math.min(waitMs * 2, backoff.maxMs);
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      if (stopped) return;
      runConsumer(kafka, options, replace).then(
        (consumer) => {
          current = consumer;
          waitMs = backoff.initialMs;
          if (stopped) void consumer.disconnect();
        },
        (restartError: unknown) =>
          replace(restartError instanceof Error ? restartError : new Error(String(restartError))),
      );
    }, delay);
  };

  current = await runConsumer(kafka, options, replace);
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(restartTimer);
      await current?.disconnect();
    },
  };
}

/** One consumer of the group, running until it is disconnected or kafkajs gives up on it (onGaveUp). */
async function runConsumer(
  kafka: Kafka,
  options: BatchConsumerOptions,
  onGaveUp: (error: Error) => void,
): Promise<Consumer> {
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
    if (!payload.restart) onGaveUp(payload.error);
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
  return consumer;
}
