import type { AccountUsage, Environment } from '@gw/admin-api';
import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { Clients } from '../clients';
import { billingPeriodOf } from '@gw/vocabulary';
import { environmentToProto } from '@gw/vocabulary/proto';
import { accountUsageResource } from './resources';

/**
 * An account's usage in the current billing period and one environment: metering's sums and days beside
 * the allowance in force as quota computes it for a request (the plan's, with the account's overrides).
 */
export async function accountUsage(
  clients: Clients,
  accountId: string,
  environmentName: Environment,
  now: Date,
): Promise<Result<AccountUsage>> {
  const found = await clients.auth.getAccount({ id: accountId });
  if (!found.ok) return found;
  const account = found.value.account!;
  const environment = environmentToProto(environmentName);
  const period = billingPeriodOf(now);
  const usageQuery = { accountId, periodStart: period.start.toISOString().slice(0, 10), environment };
  const [peeked, usage, daily] = await Promise.all([
    clients.quota.peek({ key: { accountId, environment, plan: account.plan, limitOverrides: account.limits } }),
    clients.metering.getUsage(usageQuery),
    clients.metering.getDailyUsage(usageQuery),
  ]);
  if (!peeked.ok) return peeked;
  if (!usage.ok) return usage;
  if (!daily.ok) return daily;
  const limits = peeked.value.limits!;
  return ok(
    accountUsageResource({
      period,
      plan: account.plan,
      environment: environmentName,
      allowance: Number(limits.monthlyTokens),
      overageAllowed: limits.overage,
      usage: usage.value,
      days: daily.value.days,
    }),
  );
}
