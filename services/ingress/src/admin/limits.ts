import type { PlanConfig } from '@gw/config';
import type { AccountLimits, LimitsInForce } from '@gw/admin-api';

/** One limit: what applies, the plan's value, and the account's override (null: none). */
const limit = <T>(plan: T, override: T | null) => ({ value: override ?? plan, plan, override });

/** The limits in force for an account: its plan's, with its overrides, as quota applies them. */
export function limitsResource(plan: PlanConfig, overrides: AccountLimits): Omit<LimitsInForce, 'account_id'> {
  return {
    plan: plan.id,
    residency: plan.residency,
    models: plan.models,
    requests_per_minute: limit(plan.limits.requestsPerMinute, overrides.requests_per_minute),
    concurrency: limit(plan.limits.concurrency, overrides.concurrency),
    monthly_tokens: limit(plan.limits.monthlyTokens, overrides.monthly_tokens),
    overage: limit(plan.overage.enabled, overrides.overage),
    hard_ceiling_tokens: limit(plan.hardCeilingTokens ?? plan.limits.monthlyTokens * 2, overrides.hard_ceiling_tokens),
  };
}
