import type { Pool } from '@gw/db';
import { dependencyUnavailableError, err, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { KeyEnvironment } from '@gw/vocabulary';

export interface PeriodUsageQuery {
  accountId: string;
  /** First day of the billing period, YYYY-MM-DD. */
  periodStart: string;
  environment: KeyEnvironment;
}

export interface ModelUsageLine {
  model: string;
  requests: bigint;
  billableTokens: bigint;
  /** Exact GBP as PostgreSQL's numeric(24,10) writes it, e.g. "0.0012000000". */
  costGbp: string;
}

export interface PeriodUsage {
  /** All models of the period. */
  billableTokens: bigint;
  /** One line per model, sorted by model (byte order). */
  byModel: ModelUsageLine[];
}

// One index range of usage_aggregates' primary key (account_id, period_start, environment, …).
// Sums of numeric(24,10) keep the scale, so cost_gbp reads back with ten decimals.
const periodUsageSql = `
SELECT model,
       SUM(requests)::text        AS requests,
       SUM(billable_tokens)::text AS billable_tokens,
       SUM(cost_gbp)::text        AS cost_gbp
  FROM usage_aggregates
 WHERE account_id = $1 AND period_start = $2 AND environment = $3
 GROUP BY model
 ORDER BY model COLLATE "C"`;

export interface DayUsageLine {
  /** YYYY-MM-DD, UTC. */
  day: string;
  requests: bigint;
  billableTokens: bigint;
}

// The period's events of one account (index usage_events_account_period), by the UTC day they ended:
// the same rows, written in the same transaction, as the aggregates above, so the days add up to them.
const dailyUsageSql = `
SELECT (ended_at AT TIME ZONE 'UTC')::date::text AS day,
       COUNT(*)::text                            AS requests,
       SUM(billable_tokens)::text                AS billable_tokens
  FROM usage_events
 WHERE account_id = $1 AND period_start = $2 AND environment = $3
 GROUP BY 1
 ORDER BY 1`;

const unreadable = () => err(dependencyUnavailableError('usage store'));

/** The metered usage in PostgreSQL, as the usage endpoint reports it. */
export class PeriodUsageReader {
  constructor(
    private readonly pool: Pool,
    private readonly onFailure: (error: unknown) => void,
  ) {}

  /** An account's usage in one billing period and environment; zeros when it has none. */
  async read(query: PeriodUsageQuery): Promise<Result<PeriodUsage>> {
    let rows: { model: string; requests: string; billable_tokens: string; cost_gbp: string }[];
    try {
      ({ rows } = await this.pool.query(periodUsageSql, [query.accountId, query.periodStart, query.environment]));
    } catch (error) {
      this.onFailure(error);
      return unreadable();
    }
    const byModel = rows.map((row) => ({
      model: row.model,
      requests: BigInt(row.requests),
      billableTokens: BigInt(row.billable_tokens),
      costGbp: row.cost_gbp,
    }));
    return ok({ billableTokens: byModel.reduce((total, line) => total + line.billableTokens, 0n), byModel });
  }

  /** The same usage per day that had any, in day order. */
  async readDaily(query: PeriodUsageQuery): Promise<Result<DayUsageLine[]>> {
    try {
      const { rows } = await this.pool.query<{ day: string; requests: string; billable_tokens: string }>(
        dailyUsageSql,
        [query.accountId, query.periodStart, query.environment],
      );
      return ok(
        rows.map((row) => ({
          day: row.day,
          requests: BigInt(row.requests),
          billableTokens: BigInt(row.billable_tokens),
        })),
      );
    } catch (error) {
      this.onFailure(error);
      return unreadable();
    }
  }
}
