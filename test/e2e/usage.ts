import { waitUntil } from '@gw/testing';
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
    const row = await waitUntil(
      async () => (await client.query('SELECT * FROM usage_events WHERE event_id = $1', [requestId])).rows[0],
      { what: `the usage row of ${requestId}`, timeoutMs, intervalMs: 200 },
    );
    return row as Record<string, unknown>;
  } finally {
    await client.end();
  }
}
