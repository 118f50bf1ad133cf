import type { PlanConfig } from '@gw/config';
import type { commonv1 } from '@gw/proto';

/** The numbers one decision uses: the plan's, with the account's overrides in place. */
export interface EffectiveLimits {
  requestsPerMinute: number;
  concurrency: number;
  monthlyTokens: number;
  overage: boolean;
  /** Weighted tokens at which service stops even with overage on. */
  hardCeilingTokens: number;
}

export function effectiveLimits(plan: PlanConfig, overrides: commonv1.LimitOverrides | undefined): EffectiveLimits {
  const pick = (override: bigint | undefined, planValue: number) =>
    override === undefined ? planValue : Number(override);
  const monthlyTokens = pick(overrides?.monthlyTokens, plan.limits.monthlyTokens);
  return {
    requestsPerMinute: pick(overrides?.requestsPerMinute, plan.limits.requestsPerMinute),
    concurrency: pick(overrides?.concurrency, plan.limits.concurrency),
    monthlyTokens,
    overage: overrides?.overage ?? plan.overage.enabled,
    // The plan's ceiling, by default twice the allowance in force.
    hardCeilingTokens: pick(overrides?.hardCeilingTokens, plan.hardCeilingTokens ?? 2 * monthlyTokens),
  };
}
