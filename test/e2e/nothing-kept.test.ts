import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import { createKafka } from '@gw/kafka';
import { kafkaConnection } from '@gw/local-stack';
import { harness } from './harness';
import { waitForUsageRow } from './usage';

const run = promisify(execFile);
const h = harness();

/** Every message on the usage topic, read from the beginning by a throwaway consumer group. */
async function readWholeTopic(): Promise<Buffer[]> {
  const kafka = createKafka({
    ...kafkaConnection({ kafkaBrokers: h.replica.kafkaBrokers, kafkaEnv: h.kafkaEnv }),
    clientId: 'e2e-topic-reader',
    log: () => undefined,
  });
  const admin = kafka.admin();
  await admin.connect();
  const offsets = await admin.fetchTopicOffsets(h.usageTopic);
  await admin.disconnect();
  const expected = offsets.reduce((sum, partition) => sum + Number(partition.high) - Number(partition.low), 0);
  const consumer = kafka.consumer({ groupId: `e2e-reader-${randomUUID()}` });
  const values: Buffer[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic: h.usageTopic, fromBeginning: true });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read ${values.length} of ${expected} messages`)), 30_000);
    if (expected === 0) {
      clearTimeout(timer);
      resolve();
    }
    consumer
      .run({
        eachMessage: async ({ message }) => {
          values.push(Buffer.concat([message.key ?? Buffer.alloc(0), message.value ?? Buffer.alloc(0)]));
          if (values.length >= expected) {
            clearTimeout(timer);
            resolve();
          }
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
  return values;
}

describe('nothing a caller sent is kept', () => {
  it('finds a prompt marker in no log, no Kafka message and no database row', async () => {
    const marker = `marker-${randomUUID()}`;
    const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: h.liveKey, maxRetries: 0 });
    const params = {
      model: 'claude-sonnet-5',
      max_tokens: 64,
      system: `system ${marker}`,
      messages: [{ role: 'user' as const, content: `please repeat ${marker}` }],
    };
    const created = await sdk.messages.create(params);
    expect(JSON.stringify(created.content)).toContain(marker);
    const stream = sdk.messages.stream(params);
    await stream.finalMessage();
    await waitForUsageRow(h.databaseUrl, created._request_id!);
    await waitForUsageRow(h.databaseUrl, stream.request_id!);

    const logFiles = await readdir(h.logsDir);
    expect(logFiles.length).toBeGreaterThanOrEqual(6);
    for (const file of logFiles.filter((name) => name !== 'sim-upstream.log')) {
      expect(await readFile(join(h.logsDir, file), 'utf8')).not.toContain(marker);
    }

    const messages = await readWholeTopic();
    expect(messages.length).toBeGreaterThanOrEqual(2);
    for (const message of messages) expect(message.includes(marker)).toBe(false);

    const { stdout: dump } = await run('pg_dump', ['--data-only', h.databaseUrl], { maxBuffer: 256 * 1024 * 1024 });
    expect(dump).toContain(created._request_id);
    expect(dump).not.toContain(marker);
  });
});
