import { createPool } from '@gw/db';
import type { Pool } from '@gw/db';
import { createTestDatabase } from '../../../test/support/database';
import type { TestDatabase } from '../../../test/support/database';
import { claimDue, recordAttempt, writeToOutbox } from '../src/webhooks/outbox';
import type { OutboxEntry } from '../src/webhooks/outbox';

describe('the webhook outbox in PostgreSQL', () => {
  let database: TestDatabase;
  let pool: Pool;
  const endpointId = 'whep_outbox';

  beforeAll(async () => {
    database = await createTestDatabase('gateway_test_outbox');
    pool = createPool(database.url, () => undefined);
    await pool.query(`INSERT INTO accounts (id, name, plan) VALUES ('acct_outbox', 'outbox', 'pro')`);
    await pool.query(
      `INSERT INTO webhook_endpoints (id, account_id, url, event_types, secret)
       VALUES ($1, 'acct_outbox', 'https://hooks.example.com/', '{usage.threshold_crossed}', 'whsec_AAAA')`,
      [endpointId],
    );
  });

  afterAll(async () => {
    await pool.end();
    await database.drop();
  });

  const entry = (dedupeKey: string): OutboxEntry => ({
    endpointId,
    accountId: 'acct_outbox',
    eventType: 'usage.threshold_crossed',
    dedupeKey,
    payload: { type: 'usage.threshold_crossed', timestamp: '2026-11-28T00:00:00.000Z', data: { n: dedupeKey } },
  });

  it('writes an event once per endpoint and dedupe key, however often it is written', async () => {
    expect(await writeToOutbox(pool, [entry('once')], 86_400_000)).toBe(1);
    expect(await writeToOutbox(pool, [entry('once')], 86_400_000)).toBe(0);
    const { rows } = await pool.query(`SELECT status, attempts FROM webhook_messages WHERE dedupe_key = 'once'`);
    expect(rows).toEqual([{ status: 'pending', attempts: 0 }]);
    await pool.query(`DELETE FROM webhook_messages`);
  });

  it('lets two dispatchers claim due messages at once without sharing one, and holds them for the lease', async () => {
    await writeToOutbox(
      pool,
      Array.from({ length: 10 }, (_, index) => entry(`claim-${index}`)),
      86_400_000,
    );
    const [first, second] = await Promise.all([claimDue(pool, 6, 60_000), claimDue(pool, 6, 60_000)]);
    const ids = [...first, ...second].map((message) => message.id);
    expect(new Set(ids).size).toBe(10);
    expect(ids).toHaveLength(10);
    expect(await claimDue(pool, 6, 60_000)).toEqual([]);
    const claimed = first[0]!;
    expect(claimed).toMatchObject({ attempts: 1, url: 'https://hooks.example.com/', secrets: ['whsec_AAAA'] });
    expect(JSON.parse(claimed.body)).toMatchObject({ type: 'usage.threshold_crossed' });

    await recordAttempt(
      pool,
      claimed.id,
      { statusCode: 500, error: null, durationMs: 3 },
      {
        status: 'pending',
        nextAttemptAt: new Date(Date.now() - 1),
      },
    );
    const again = await claimDue(pool, 6, 60_000);
    expect(again.map((message) => message.id)).toEqual([claimed.id]);
    expect(again[0]!.attempts).toBe(2);
    await recordAttempt(pool, claimed.id, { statusCode: 204, error: null, durationMs: 2 }, { status: 'delivered' });
    const { rows } = await pool.query(
      `SELECT m.status, m.delivered_at IS NOT NULL AS delivered, array_agg(a.status_code ORDER BY a.id) AS codes
         FROM webhook_messages m JOIN webhook_attempts a ON a.message_id = m.id WHERE m.id = $1 GROUP BY 1, 2`,
      [claimed.id],
    );
    expect(rows).toEqual([{ status: 'delivered', delivered: true, codes: [500, 204] }]);
  });
});
