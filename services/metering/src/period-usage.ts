import type { Pool } from '@gw/db';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';

export interface PeriodUsageQuery {
  accountId: string;
  /** First day of the billing period, YYYY-MM-DD. */
  periodStart: string;
  environment: 'live' | 'test';
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
      return err(
        gatewayError('overloaded_error', 'The gateway cannot read its usage store. Retry with exponential backoff.', {
          retryAfterMs: 1000,
        }),
      );
    }
    const byModel = rows.map((row) => ({
      model: row.model,
      requests: BigInt(row.requests),
      billableTokens: BigInt(row.billable_tokens),
      costGbp: row.cost_gbp,
    }));
    return ok({ billableTokens: byModel.reduce((total, line) => total + line.billableTokens, 0n), byModel });
  }
}
