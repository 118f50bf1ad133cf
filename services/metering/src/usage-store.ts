import { createHash } from 'node:crypto';
import { inTransaction } from '@gw/db';
import type { Pool, PoolClient } from '@gw/db';
import { KeyEnvironment } from '@gw/vocabulary';
import { formatGbp, priceEvent } from './pricing';
import type { PriceList, UnpricedReason } from './pricing';
import { aggregateRows, firstOfEachEvent } from './usage-rows';
import type { PeriodMovement, UsageAlerts } from './webhooks/usage-alerts';
import type { AggregateDelta, PricedRow, UsageRow } from './usage-rows';

/** Rows decoded from consecutive messages of one partition. */
export interface ConsumedUsage {
  rows: UsageRow[];
}

/** A live event stored at cost 0 because the configuration does not know its model or plan. */
export interface UnpricedEvent {
  eventId: string;
  accountId: string;
  keyId: string;
  model: string;
  plan: string | null;
  reason: UnpricedReason;
}

export interface RecordedUsage {
  /** Events stored for the first time. */
  written: number;
  /** Events whose id was already stored (a redelivery or a producer retry): counted once. */
  duplicates: number;
  /** Events stored for the first time that could not be priced. */
  unpriced: UnpricedEvent[];
}

// Inserted with unnest over one array per column: one statement per chunk whatever its size.
const insertEventsSql = `
INSERT INTO usage_events (
  event_id, account_id, key_id, environment, model, pool_id, region,
  input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens, billable_tokens,
  outcome, error_type, streamed, started_at, ended_at, period_start,
  plan, cost_gbp, overage_tokens
)
SELECT * FROM unnest(
  $1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
  $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[],
  $13::text[], $14::text[], $15::boolean[], $16::timestamptz[], $17::timestamptz[], $18::date[],
  $19::text[], $20::numeric[], $21::bigint[]
)
ON CONFLICT (event_id) DO NOTHING
RETURNING event_id`;

const upsertAggregatesSql = `
INSERT INTO usage_aggregates (
  account_id, key_id, model, environment, period_start, requests,
  input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens, billable_tokens,
  cost_gbp, overage_tokens
)
SELECT * FROM unnest(
  $1::text[], $2::text[], $3::text[], $4::text[], $5::date[], $6::bigint[],
  $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[],
  $12::numeric[], $13::bigint[]
)
ON CONFLICT (account_id, period_start, environment, model, key_id) DO UPDATE SET
  requests = usage_aggregates.requests + EXCLUDED.requests,
  input_tokens = usage_aggregates.input_tokens + EXCLUDED.input_tokens,
  output_tokens = usage_aggregates.output_tokens + EXCLUDED.output_tokens,
  cache_read_input_tokens = usage_aggregates.cache_read_input_tokens + EXCLUDED.cache_read_input_tokens,
  cache_creation_input_tokens = usage_aggregates.cache_creation_input_tokens + EXCLUDED.cache_creation_input_tokens,
  billable_tokens = usage_aggregates.billable_tokens + EXCLUDED.billable_tokens,
  cost_gbp = usage_aggregates.cost_gbp + EXCLUDED.cost_gbp,
  overage_tokens = usage_aggregates.overage_tokens + EXCLUDED.overage_tokens`;

// Serialises writers of the same account and period (two consumers may hold a partition for a moment
// during a rebalance): taken in the order of the array, which is sorted, so they cannot deadlock.
const lockPeriodsSql = `
SELECT pg_advisory_xact_lock(lock_key) FROM unnest($1::bigint[]) WITH ORDINALITY AS locks (lock_key, n) ORDER BY n`;

// The live billable tokens already metered per account and period: the primary key's prefix.
const billableBeforeSql = `
SELECT account_id, period_start::text AS period_start, SUM(billable_tokens)::text AS billable_tokens
  FROM usage_aggregates
 WHERE (account_id, period_start) IN (SELECT * FROM unnest($1::text[], $2::date[]))
   AND environment = $3
 GROUP BY account_id, period_start`;

const storedIdsSql = `SELECT event_id FROM usage_events WHERE event_id = ANY($1::text[])`;

async function insertEvents(client: PoolClient, rows: readonly PricedRow[]): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const column = <T>(pick: (row: PricedRow) => T) => rows.map(pick);
  const result = await client.query<{ event_id: string }>(insertEventsSql, [
    column((row) => row.eventId),
    column((row) => row.accountId),
    column((row) => row.keyId),
    column((row) => row.environment),
    column((row) => row.model),
    column((row) => row.poolId),
    column((row) => row.region),
    column((row) => row.inputTokens.toString()),
    column((row) => row.outputTokens.toString()),
    column((row) => row.cacheReadInputTokens.toString()),
    column((row) => row.cacheCreationInputTokens.toString()),
    column((row) => row.billableTokens.toString()),
    column((row) => row.outcome),
    column((row) => row.errorType),
    column((row) => row.streamed),
    column((row) => row.startedAt.toISOString()),
    column((row) => row.endedAt.toISOString()),
    column((row) => row.periodStart),
    column((row) => row.plan),
    column((row) => formatGbp(row.costGbp)),
    column((row) => row.overageTokens.toString()),
  ]);
  return new Set(result.rows.map((row) => row.event_id));
}

async function addToAggregates(client: PoolClient, deltas: readonly AggregateDelta[]): Promise<void> {
  if (deltas.length === 0) return;
  const column = <T>(pick: (delta: AggregateDelta) => T) => deltas.map(pick);
  await client.query(upsertAggregatesSql, [
    column((delta) => delta.accountId),
    column((delta) => delta.keyId),
    column((delta) => delta.model),
    column((delta) => delta.environment),
    column((delta) => delta.periodStart),
    column((delta) => delta.requests.toString()),
    column((delta) => delta.inputTokens.toString()),
    column((delta) => delta.outputTokens.toString()),
    column((delta) => delta.cacheReadInputTokens.toString()),
    column((delta) => delta.cacheCreationInputTokens.toString()),
    column((delta) => delta.billableTokens.toString()),
    column((delta) => formatGbp(delta.costGbp)),
    column((delta) => delta.overageTokens.toString()),
  ]);
}

type PricedChunkRow = PricedRow & { unpriced?: UnpricedReason; billableBefore: bigint };

const periodKey = (row: UsageRow) => JSON.stringify([row.accountId, row.periodStart]);

/** A 64-bit advisory lock key per account and period; collisions only serialise a little more. */
function lockKey(key: string): bigint {
  return createHash('sha256').update(`gateway.usage:${key}`).digest().readBigInt64BE(0);
}

/**
 * Locks the live periods of the rows and reads their billable tokens so far: for each account and
 * period, the total before the first of these rows.
 */
async function billableBefore(client: PoolClient, rows: readonly UsageRow[]): Promise<Map<string, bigint>> {
  const live = new Map<string, UsageRow>();
  for (const row of rows) if (row.environment === KeyEnvironment.live) live.set(periodKey(row), row);
  const totals = new Map<string, bigint>([...live.keys()].map((key) => [key, 0n]));
  if (live.size === 0) return totals;
  const locks = [...new Set([...live.keys()].map(lockKey))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  await client.query(lockPeriodsSql, [locks.map(String)]);
  const periods = [...live.values()];
  const result = await client.query<{ account_id: string; period_start: string; billable_tokens: string }>(
    billableBeforeSql,
    [periods.map((row) => row.accountId), periods.map((row) => row.periodStart), KeyEnvironment.live],
  );
  for (const stored of result.rows) {
    totals.set(JSON.stringify([stored.account_id, stored.period_start]), BigInt(stored.billable_tokens));
  }
  return totals;
}

/**
 * The rows not stored yet, priced in order: each live row's "before" is its period's stored total
 * plus the new rows of the same account and period ahead of it in this chunk (one account's events
 * are on one partition, so they arrive in order). Duplicates count nowhere.
 */
async function priceNewRows(
  client: PoolClient,
  prices: PriceList,
  rows: readonly UsageRow[],
): Promise<PricedChunkRow[]> {
  if (rows.length === 0) return [];
  const before = await billableBefore(client, rows);
  // Read under the period locks: no other writer can add events of these periods until we commit.
  const stored = await client.query<{ event_id: string }>(storedIdsSql, [rows.map((row) => row.eventId)]);
  const storedIds = new Set(stored.rows.map((row) => row.event_id));
  return rows
    .filter((row) => !storedIds.has(row.eventId))
    .map((row) => {
      const key = periodKey(row);
      const total = before.get(key) ?? 0n;
      const price = priceEvent(prices, row, total);
      if (row.environment === KeyEnvironment.live) before.set(key, total + row.billableTokens);
      return {
        ...row,
        costGbp: price.costGbp,
        overageTokens: price.overageTokens,
        unpriced: price.unpriced,
        billableBefore: total,
      };
    });
}

/** How each account's live period total moved with the chunk's new rows (in order, under the period locks). */
export function periodMovements(rows: readonly PricedChunkRow[]): PeriodMovement[] {
  const movements = new Map<string, PeriodMovement>();
  for (const row of rows) {
    if (row.environment !== KeyEnvironment.live) continue;
    const key = periodKey(row);
    const after = row.billableBefore + row.billableTokens;
    const known = movements.get(key);
    if (known) Object.assign(known, { after, allowanceTokens: row.allowanceTokens, plan: row.plan });
    else {
      movements.set(key, {
        accountId: row.accountId,
        periodStart: row.periodStart,
        before: row.billableBefore,
        after,
        allowanceTokens: row.allowanceTokens,
        plan: row.plan,
      });
    }
  }
  return [...movements.values()];
}

function unpricedEvents(rows: readonly PricedChunkRow[]): UnpricedEvent[] {
  return rows.flatMap(({ eventId, accountId, keyId, model, plan, unpriced }) =>
    unpriced ? [{ eventId, accountId, keyId, model, plan, reason: unpriced }] : [],
  );
}

/**
 * Stores a chunk of usage in one transaction: the events not seen before with their cost, and the
 * aggregates of exactly those events. A redelivered event changes nothing: its id is stored already
 * (the consumer's offsets live in Kafka, committed after this transaction).
 */
export async function recordUsage(
  pool: Pool,
  prices: PriceList,
  usage: ConsumedUsage,
  alerts?: UsageAlerts,
): Promise<RecordedUsage> {
  const rows = firstOfEachEvent(usage.rows);
  return inTransaction(pool, async (client) => {
    const priced = await priceNewRows(client, prices, rows);
    const insertedIds = await insertEvents(client, priced);
    if (insertedIds.size !== priced.length) {
      // Another writer stored one of these ids since the check (test traffic is not under the period
      // locks, nor an id reused by another account): the totals may be wrong, so the chunk is redone.
      throw new Error('usage events were stored concurrently; the chunk is retried');
    }
    await addToAggregates(client, aggregateRows(priced));
    // The alerts these events raise commit with them, or not at all.
    if (alerts) await alerts.write(client, periodMovements(priced));
    return {
      written: insertedIds.size,
      duplicates: usage.rows.length - insertedIds.size,
      unpriced: unpricedEvents(priced),
    };
  });
}
