import type { PlanConfig } from '@gw/config';
import { err, gatewayError } from '@gw/errors';
import { requireAccount } from './principal';
import { accountResource } from './resources';
import { answer } from './route-kit';
import type { RouteKit } from './route-kit';

type Overrides = ReturnType<typeof accountResource>['limits'];

/** One limit: what applies, the plan's value, and the account's override (null: none). */
const limit = <T>(plan: T, override: T | null) => ({ value: override ?? plan, plan, override });

/** The limits in force for an account: its plan's, with its overrides, as quota applies them. */
export function limitsResource(plan: PlanConfig, overrides: Overrides) {
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

/** The limits page: read by the account's admins and the operator; the operator changes them with PATCH …/limits. */
export function registerLimitsRoutes({ router, route, clients, plans }: RouteKit): void {
  router.get(
    '/accounts/:id/limits',
    route(async (request, principal) => {
      const accountId = String(request.params.id);
      const allowed = requireAccount(principal, accountId);
      if (!allowed.ok) return allowed;
      const found = await clients.auth.getAccount({ id: accountId });
      if (!found.ok) return found;
      const account = accountResource(found.value.account!);
      const plan = plans().find((candidate) => candidate.id === account.plan);
      if (!plan) return err(gatewayError('api_error', 'The account\u2019s plan is not in the gateway configuration.'));
      return answer({ account_id: accountId, ...limitsResource(plan, account.limits) });
    }),
  );
}
