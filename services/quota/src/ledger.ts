import type { Pool } from '@gw/db';
import { KeyEnvironment } from '@gw/vocabulary';

/**
 * The metered usage in Postgres (written by metering), from which a lost allowance counter is rebuilt.
 */
export class UsageLedger {
  constructor(private readonly pool: Pool) {}

  async billableTokens(accountId: string, periodStart: string): Promise<number> {
    const { rows } = await this.pool.query<{ total: string | null }>(
      `SELECT SUM(billable_tokens) AS total FROM usage_aggregates
       WHERE account_id = $1 AND environment = $3 AND period_start = $2`,
      [accountId, periodStart, KeyEnvironment.live],
    );
    return Number(rows[0]?.total ?? 0);
  }
}
