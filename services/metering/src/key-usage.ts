import type { Pool } from '@gw/db';
import { dependencyUnavailableError, err, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { PeriodUsageQuery } from './period-usage';

/** Sums of one key's requests, as usage_aggregates and usage_events hold them. */
export interface TokenTotals {
  requests: bigint;
  inputTokens: bigint;
  outputTokens: bigint;
  cacheReadInputTokens: bigint;
  cacheCreationInputTokens: bigint;
  billableTokens: bigint;
  /** Exact GBP as PostgreSQL writes numeric(24,10). */
  costGbp: string;
}

export interface RefusalCount {
  reason: string;
  refusals: bigint;
}

export interface KeyUsageLine {
  keyId: string;
  totals: TokenTotals;
  refusals: RefusalCount[];
}

export interface KeyDayUsageLine extends KeyUsageLine {
  day: string;
}

const totalsColumns = `
       SUM(requests)::text                    AS requests,
       SUM(input_tokens)::text                AS input_tokens,
       SUM(output_tokens)::text               AS output_tokens,
       SUM(cache_read_input_tokens)::text     AS cache_read_input_tokens,
       SUM(cache_creation_input_tokens)::text AS cache_creation_input_tokens,
       SUM(billable_tokens)::text             AS billable_tokens,
       SUM(cost_gbp)::text                    AS cost_gbp`;

// The same rows GET /v1/usage sums (the aggregates' primary key prefix), grouped by key instead of model:
// the keys' lines add up to the account's exactly.
const keyTotalsSql = `
SELECT key_id, ${totalsColumns}
  FROM usage_aggregates
 WHERE account_id = $1 AND period_start = $2 AND environment = $3
 GROUP BY key_id`;

// The period's events by UTC day and key: the rows the aggregates were built from, in the same transactions.
const keyDayTotalsSql = `
SELECT (ended_at AT TIME ZONE 'UTC')::date::text AS day, key_id,
       COUNT(*)::text                         AS requests,
       SUM(input_tokens)::text                AS input_tokens,
       SUM(output_tokens)::text               AS output_tokens,
       SUM(cache_read_input_tokens)::text     AS cache_read_input_tokens,
       SUM(cache_creation_input_tokens)::text AS cache_creation_input_tokens,
       SUM(billable_tokens)::text             AS billable_tokens,
       SUM(cost_gbp)::text                    AS cost_gbp
  FROM usage_events
 WHERE account_id = $1 AND period_start = $2 AND environment = $3
 GROUP BY 1, 2`;

const refusalsSql = `
SELECT day::text AS day, key_id, reason, SUM(refusals)::text AS refusals
  FROM key_refusals
 WHERE account_id = $1 AND day >= $2::date AND day < ($2::date + interval '1 month') AND environment = $3
 GROUP BY 1, 2, 3`;

interface TotalsRow {
  key_id: string;
  day?: string;
  requests: string;
  input_tokens: string;
  output_tokens: string;
  cache_read_input_tokens: string;
  cache_creation_input_tokens: string;
  billable_tokens: string;
  cost_gbp: string;
}

interface RefusalRow {
  day: string;
  key_id: string;
  reason: string;
  refusals: string;
}

const zeroTotals = (): TokenTotals => ({
  requests: 0n,
  inputTokens: 0n,
  outputTokens: 0n,
  cacheReadInputTokens: 0n,
  cacheCreationInputTokens: 0n,
  billableTokens: 0n,
  costGbp: '0',
});

function totalsOf(row: TotalsRow): TokenTotals {
  return {
    requests: BigInt(row.requests),
    inputTokens: BigInt(row.input_tokens),
    outputTokens: BigInt(row.output_tokens),
    cacheReadInputTokens: BigInt(row.cache_read_input_tokens),
    cacheCreationInputTokens: BigInt(row.cache_creation_input_tokens),
    billableTokens: BigInt(row.billable_tokens),
    costGbp: row.cost_gbp,
  };
}

const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Joins usage lines and refusal counts on a grouping key (the key id, or the day and key id): a key
 * with refusals and no usage gets a line of zeros. Lines sorted by that grouping key, refusals by reason.
 */
export function joinRefusals<Line extends KeyUsageLine>(
  usage: readonly Line[],
  refusals: readonly RefusalRow[],
  groupOf: (line: { keyId: string; day?: string }) => string,
  emptyLine: (row: RefusalRow) => Line,
): Line[] {
  const lines = new Map<string, Line>(usage.map((line) => [groupOf(line), line]));
  for (const row of refusals) {
    const group = groupOf({ keyId: row.key_id, day: row.day });
    let line = lines.get(group);
    if (!line) lines.set(group, (line = emptyLine(row)));
    const known = line.refusals.find((count) => count.reason === row.reason);
    if (known) known.refusals += BigInt(row.refusals);
    else line.refusals.push({ reason: row.reason, refusals: BigInt(row.refusals) });
  }
  const sorted = [...lines.entries()].sort(([a], [b]) => byteOrder(a, b)).map(([, line]) => line);
  for (const line of sorted) line.refusals.sort((a, b) => byteOrder(a.reason, b.reason));
  return sorted;
}

const unreadable = () => err(dependencyUnavailableError('usage store'));

/** An account's usage per key (and per key and day) in one billing period and environment. */
export class KeyUsageReader {
  constructor(
    private readonly pool: Pool,
    private readonly onFailure: (error: unknown) => void,
  ) {}

  async readByKey(query: PeriodUsageQuery): Promise<Result<KeyUsageLine[]>> {
    const read = await this.readBoth(keyTotalsSql, query);
    if (!read.ok) return read;
    const usage = read.value.totals.map((row) => ({ keyId: row.key_id, totals: totalsOf(row), refusals: [] }));
    return ok(
      joinRefusals<KeyUsageLine>(
        usage,
        read.value.refusals,
        (line) => line.keyId,
        (row) => ({ keyId: row.key_id, totals: zeroTotals(), refusals: [] }),
      ),
    );
  }

  async readByKeyAndDay(query: PeriodUsageQuery): Promise<Result<KeyDayUsageLine[]>> {
    const read = await this.readBoth(keyDayTotalsSql, query);
    if (!read.ok) return read;
    const usage = read.value.totals.map((row) => ({
      day: row.day!,
      keyId: row.key_id,
      totals: totalsOf(row),
      refusals: [],
    }));
    return ok(
      joinRefusals<KeyDayUsageLine>(
        usage,
        read.value.refusals,
        (line) => `${line.day} ${line.keyId}`,
        (row) => ({ day: row.day, keyId: row.key_id, totals: zeroTotals(), refusals: [] }),
      ),
    );
  }

  private async readBoth(
    totalsSql: string,
    query: PeriodUsageQuery,
  ): Promise<Result<{ totals: TotalsRow[]; refusals: RefusalRow[] }>> {
    const parameters = [query.accountId, query.periodStart, query.environment];
    try {
      const [totals, refusals] = await Promise.all([
        this.pool.query<TotalsRow>(totalsSql, parameters),
        this.pool.query<RefusalRow>(refusalsSql, parameters),
      ]);
      return ok({ totals: totals.rows, refusals: refusals.rows });
    } catch (error) {
      this.onFailure(error);
      return unreadable();
    }
  }
}
