import { inTransaction } from '@gw/db';
import type { Pool, PoolClient } from '@gw/db';
import { aggregateRows, firstOfEachEvent } from './usage-rows';
import type { AggregateDelta, UsageRow } from './usage-rows';

/** Rows decoded from consecutive messages of one partition, and where that partition resumes. */
export interface ConsumedUsage {
  consumerGroup: string;
  topic: string;
  partition: number;
  /** Last offset of the messages + 1. */
  nextOffset: string;
  rows: UsageRow[];
}

export interface RecordedUsage {
  /** Events stored for the first time. */
  written: number;
  /** Events whose id was already stored (a redelivery or a producer retry): counted once. */
  duplicates: number;
}

// Inserted with unnest over one array per column: one statement per chunk whatever its size.
const insertEventsSql = `
INSERT INTO usage_events (
  event_id, account_id, key_id, environment, model, pool_id, region,
  input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens, billable_tokens,
  outcome, error_type, streamed, started_at, ended_at, period_start
)
SELECT * FROM unnest(
  $1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
  $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[],
  $13::text[], $14::text[], $15::boolean[], $16::timestamptz[], $17::timestamptz[], $18::date[]
)
ON CONFLICT (event_id) DO NOTHING
RETURNING event_id`;

const upsertAggregatesSql = `
INSERT INTO usage_aggregates (
  account_id, key_id, model, environment, period_start, requests,
  input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens, billable_tokens
)
SELECT * FROM unnest(
  $1::text[], $2::text[], $3::text[], $4::text[], $5::date[], $6::bigint[],
  $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[]
)
ON CONFLICT (account_id, period_start, environment, model, key_id) DO UPDATE SET
  requests = usage_aggregates.requests + EXCLUDED.requests,
  input_tokens = usage_aggregates.input_tokens + EXCLUDED.input_tokens,
  output_tokens = usage_aggregates.output_tokens + EXCLUDED.output_tokens,
  cache_read_input_tokens = usage_aggregates.cache_read_input_tokens + EXCLUDED.cache_read_input_tokens,
  cache_creation_input_tokens = usage_aggregates.cache_creation_input_tokens + EXCLUDED.cache_creation_input_tokens,
  billable_tokens = usage_aggregates.billable_tokens + EXCLUDED.billable_tokens`;

const saveOffsetSql = `
INSERT INTO consumer_offsets (consumer_group, topic, partition, next_offset)
VALUES ($1, $2, $3, $4)
ON CONFLICT (consumer_group, topic, partition) DO UPDATE SET next_offset = EXCLUDED.next_offset`;

async function insertEvents(client: PoolClient, rows: readonly UsageRow[]): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const column = <T>(pick: (row: UsageRow) => T) => rows.map(pick);
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
  ]);
}

/**
 * Stores a chunk of usage in one transaction: the events not seen before, the aggregates of exactly
 * those events, and the partition's next offset. A redelivered chunk changes nothing but the offset.
 */
export async function recordUsage(pool: Pool, usage: ConsumedUsage): Promise<RecordedUsage> {
  const rows = firstOfEachEvent(usage.rows);
  return inTransaction(pool, async (client) => {
    const insertedIds = await insertEvents(client, rows);
    await addToAggregates(client, aggregateRows(rows.filter((row) => insertedIds.has(row.eventId))));
    await client.query(saveOffsetSql, [usage.consumerGroup, usage.topic, usage.partition, usage.nextOffset]);
    return { written: insertedIds.size, duplicates: usage.rows.length - insertedIds.size };
  });
}
