import { ok } from '@gw/errors';
import type { RateLimitWindow, Result } from '@gw/errors';
import type { MeteringClient } from '../clients/metering';
import type { QuotaClient } from '../clients/quota';
import { billingPeriodOf } from '@gw/vocabulary';
import { usageReportOf } from '../domain/usage-report';
import type { UsageReport } from '../domain/usage-report';
import { authenticate } from './authenticate';
import type { CallerRequest, KeyVerifier } from './types';

/** What the usage report needs: the key, where its account stands in quota, and metering's counts. */
export interface UsageDeps {
  keys: KeyVerifier;
  quota: Pick<QuotaClient, 'peek'>;
  metering: Pick<MeteringClient, 'usage'>;
}

/**
 * GET /v1/usage: free (no per-minute count, no slot), but authenticated and address-checked. Tokens and
 * rate limits are the account's; by_model is the account's use in the period, in the calling key's
 * environment.
 */
export async function handleUsage(
  deps: UsageDeps,
  request: CallerRequest,
  setRateLimit: (window: RateLimitWindow) => void,
  now: () => Date = () => new Date(),
): Promise<Result<UsageReport>> {
  const verified = await authenticate(deps.keys, request);
  if (!verified.ok) return verified;
  const key = verified.value;
  const period = billingPeriodOf(now());
  const [standing, usage] = await Promise.all([
    deps.quota.peek(key, request),
    deps.metering.usage(key, period.start.toISOString().slice(0, 10), request),
  ]);
  if (!standing.ok) return standing;
  if (!usage.ok) return usage;
  setRateLimit(standing.value.window);
  return ok(usageReportOf(key, period, standing.value, usage.value));
}
