import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';

/** Polls for a request's usage row, which arrives asynchronously through Kafka. */
export async function waitForUsageRow(
  databaseUrl: string,
  requestId: string,
  timeoutMs = 20_000,
): Promise<Record<string, unknown>> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { rows } = await client.query('SELECT * FROM usage_events WHERE event_id = $1', [requestId]);
      if (rows[0]) return rows[0] as Record<string, unknown>;
      if (Date.now() > deadline) throw new Error(`no usage row for ${requestId} after ${timeoutMs} ms`);
      await sleep(200);
    }
  } finally {
    await client.end();
  }
}
