import { ok } from '@gw/errors';
import type { RateLimitWindow, Result } from '@gw/errors';
import { commonv1 } from '@gw/proto';
import { authenticate } from './authenticate';
import type { CallerRequest, GatewayDeps } from './types';
import { windowOf } from '../domain/rate-limit';

/** The usage report of spec §2.2, field for field. */
export interface UsageReport {
  period: { start: string; end: string };
  plan: string;
  residency: string;
  privacy_mode: string;
  tokens: {
    allowance: number;
    used: number;
    remaining: number;
    percent_used: number;
    overage_allowed: boolean;
  };
  rate_limit: { requests_per_minute: number; remaining: number; concurrency: number };
  by_model: { model: string; requests: number; billable_tokens: number; cost_gbp: number }[];
}

const residencyNames: Partial<Record<commonv1.Residency, string>> = {
  [commonv1.Residency.UK]: 'uk',
  [commonv1.Residency.EU]: 'eu',
};
const privacyModeNames: Partial<Record<commonv1.PrivacyMode, string>> = {
  [commonv1.PrivacyMode.OFF]: 'off',
  [commonv1.PrivacyMode.FLAG]: 'flag',
  [commonv1.PrivacyMode.REDACT]: 'redact',
  [commonv1.PrivacyMode.TOKENISE]: 'tokenise',
};

/** The billing period of an instant: the calendar month in UTC (docs/decisions.md). */
export function billingPeriod(at: Date): { start: Date; end: Date } {
  return {
    start: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1)),
    end: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1)),
  };
}

/** ISO 8601 with an explicit UTC offset, as the spec asks: 2026-11-01T00:00:00+00:00. */
const isoWithOffset = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, '+00:00');

/** Rounds an exact decimal string to four places, half away from zero, without floating-point drift. */
export function roundGbp(decimal: string): number {
  const negative = decimal.startsWith('-');
  const [whole = '0', fraction = ''] = decimal.replace('-', '').split('.');
  const scaled = BigInt(whole + fraction.padEnd(10, '0').slice(0, 10));
  const rounded = (scaled + 500_000n) / 1_000_000n;
  const value = Number(rounded) / 10_000;
  return negative ? -value : value;
}

/**
 * GET /v1/usage: free (no per-minute count, no slot), but authenticated and address-checked. Tokens and
 * rate limits are the account's; by_model is the account's use in the period, in the calling key's
 * environment.
 */
export async function handleUsage(
  deps: GatewayDeps,
  request: CallerRequest,
  setRateLimit: (window: RateLimitWindow) => void,
  now: () => Date = () => new Date(),
): Promise<Result<UsageReport>> {
  const { clients } = deps;
  const verified = await authenticate(deps.keys, request);
  if (!verified.ok) return verified;
  const key = verified.value;
  const period = billingPeriod(now());
  const [peeked, usage] = await Promise.all([
    clients.quota.peek({ key }),
    clients.metering.getUsage({
      accountId: key.accountId,
      periodStart: period.start.toISOString().slice(0, 10),
      environment: key.environment,
    }),
  ]);
  if (!peeked.ok) return peeked;
  if (!usage.ok) return usage;
  const window = windowOf(peeked.value.window!);
  setRateLimit(window);
  const limits = peeked.value.limits!;
  const allowance = Number(limits.monthlyTokens);
  const used = Number(usage.value.billableTokens);
  return ok({
    period: { start: isoWithOffset(period.start), end: isoWithOffset(period.end) },
    plan: key.plan,
    residency: residencyNames[key.residency] ?? 'unknown',
    privacy_mode: privacyModeNames[key.privacyMode] ?? 'unknown',
    tokens: {
      allowance,
      used,
      remaining: Math.max(0, allowance - used),
      percent_used: Math.round((used / allowance) * 100 * 10_000) / 10_000,
      overage_allowed: limits.overage,
    },
    rate_limit: {
      requests_per_minute: Number(limits.requestsPerMinute),
      remaining: window.remaining,
      concurrency: Number(limits.concurrency),
    },
    by_model: usage.value.byModel.map((line) => ({
      model: line.model,
      requests: Number(line.requests),
      billable_tokens: Number(line.billableTokens),
      cost_gbp: roundGbp(line.costGbp || '0'),
    })),
  });
}

/** JSON with every cost_gbp written with exactly four decimals, as the spec shows money. */
export function usageReportJson(report: UsageReport): string {
  return JSON.stringify(report, (name, value: unknown) =>
    name === 'cost_gbp' && typeof value === 'number' ? `__gbp__${value.toFixed(4)}` : value,
  ).replace(/"__gbp__(-?\d+\.\d{4})"/g, '$1');
}
