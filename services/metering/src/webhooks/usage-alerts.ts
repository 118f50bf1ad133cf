import type { GatewayConfig } from '@gw/config';
import type { PoolClient } from '@gw/db';
import { KeyEnvironment } from '@gw/vocabulary';
import { writeToOutbox } from './outbox';
import type { OutboxEntry } from './outbox';

/** How one account's live usage of one period moved in a stored chunk. */
export interface PeriodMovement {
  accountId: string;
  /** YYYY-MM-DD. */
  periodStart: string;
  before: bigint;
  after: bigint;
  /** The allowance in force for the last of the chunk's events (the plan's with the account's override). */
  allowanceTokens: bigint;
  plan: string | null;
}

/** An endpoint subscribed to usage events, with the account's ceiling override. */
export interface UsageSubscriber {
  endpointId: string;
  accountId: string;
  eventTypes: string[];
  thresholdsPercent: number[];
  ceilingOverride: bigint | null;
}

/** The plans' own hard ceilings, where the configuration sets one. */
export function hardCeilingsOf(config: GatewayConfig): Map<string, number> {
  return new Map(
    config.plans.flatMap((plan) => (plan.hardCeilingTokens === undefined ? [] : [[plan.id, plan.hardCeilingTokens]])),
  );
}

/** What an account may use at most in a period: its override, else its plan's, else twice the allowance. */
export function hardCeiling(
  movement: PeriodMovement,
  subscriber: UsageSubscriber,
  planCeilings: ReadonlyMap<string, number>,
): bigint {
  if (subscriber.ceilingOverride !== null) return subscriber.ceilingOverride;
  const planCeiling = movement.plan === null ? undefined : planCeilings.get(movement.plan);
  return planCeiling !== undefined ? BigInt(planCeiling) : 2n * movement.allowanceTokens;
}

/**
 * The events a movement raises for one endpoint: each chosen threshold of the allowance passed (from
 * below it to at or above it), and the hard ceiling reached. A threshold is raised once per period
 * whatever happens after: the dedupe key carries the period.
 */
export function usageEvents(
  movement: PeriodMovement,
  subscriber: UsageSubscriber,
  planCeilings: ReadonlyMap<string, number>,
  now: Date,
): OutboxEntry[] {
  const entries: OutboxEntry[] = [];
  const { before, after, allowanceTokens } = movement;
  const base = {
    account_id: movement.accountId,
    environment: KeyEnvironment.live,
    period_start: movement.periodStart,
    allowance_tokens: Number(allowanceTokens),
    used_tokens: Number(after),
  };
  const entry = (eventType: OutboxEntry['eventType'], dedupe: string, data: Record<string, unknown>): OutboxEntry => ({
    endpointId: subscriber.endpointId,
    accountId: movement.accountId,
    eventType,
    dedupeKey: `${eventType}:${movement.periodStart}:${dedupe}`,
    payload: { type: eventType, timestamp: now.toISOString(), data },
  });
  if (allowanceTokens > 0n && subscriber.eventTypes.includes('usage.threshold_crossed')) {
    for (const percent of subscriber.thresholdsPercent) {
      const line = allowanceTokens * BigInt(percent);
      if (before * 100n < line && after * 100n >= line) {
        entries.push(entry('usage.threshold_crossed', String(percent), { ...base, threshold_percent: percent }));
      }
    }
  }
  if (subscriber.eventTypes.includes('usage.ceiling_reached')) {
    const ceiling = hardCeiling(movement, subscriber, planCeilings);
    if (before < ceiling && after >= ceiling) {
      entries.push(entry('usage.ceiling_reached', 'ceiling', { ...base, hard_ceiling_tokens: Number(ceiling) }));
    }
  }
  return entries;
}

const subscribersSql = `
SELECT e.id, e.account_id, e.event_types, e.thresholds_percent, a.limit_hard_ceiling_tokens::text AS ceiling
  FROM webhook_endpoints e JOIN accounts a ON a.id = e.account_id
 WHERE e.account_id = ANY($1::text[]) AND e.deleted_at IS NULL
   AND e.event_types && ARRAY['usage.threshold_crossed', 'usage.ceiling_reached']`;

/** Detects the usage events of a chunk and writes them to the outbox, in the chunk's transaction. */
export class UsageAlerts {
  constructor(
    private readonly planCeilings: () => ReadonlyMap<string, number>,
    private readonly retryWindowMs: number,
  ) {}

  async write(client: PoolClient, movements: readonly PeriodMovement[], now = new Date()): Promise<number> {
    const moved = movements.filter((movement) => movement.after > movement.before);
    if (moved.length === 0) return 0;
    const { rows } = await client.query<{
      id: string;
      account_id: string;
      event_types: string[];
      thresholds_percent: number[];
      ceiling: string | null;
    }>(subscribersSql, [[...new Set(moved.map((movement) => movement.accountId))]]);
    if (rows.length === 0) return 0;
    const ceilings = this.planCeilings();
    const entries = moved.flatMap((movement) =>
      rows
        .filter((row) => row.account_id === movement.accountId)
        .flatMap((row) =>
          usageEvents(
            movement,
            {
              endpointId: row.id,
              accountId: row.account_id,
              eventTypes: row.event_types,
              thresholdsPercent: row.thresholds_percent,
              ceilingOverride: row.ceiling === null ? null : BigInt(row.ceiling),
            },
            ceilings,
            now,
          ),
        ),
    );
    return writeToOutbox(client, entries, this.retryWindowMs);
  }
}
