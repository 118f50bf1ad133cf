import { privacyModeFromProto, residencyFromProto } from '@gw/vocabulary/proto';
import type { PeriodUsage } from './period-usage';
import type { Standing } from './limits';
import type { VerifiedKey } from './key';

/** The usage report of GET /v1/usage, field for field. */
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

/** JSON with every cost_gbp written with exactly four decimals, as the spec shows money. */
export function usageReportJson(report: UsageReport): string {
  return JSON.stringify(report, (name, value: unknown) =>
    name === 'cost_gbp' && typeof value === 'number' ? `__gbp__${value.toFixed(4)}` : value,
  ).replace(/"__gbp__(-?\d+\.\d{4})"/g, '$1');
}

/** The report of a key's account in a period, from where it stands in quota and what metering counted. */
export function usageReportOf(
  key: Pick<VerifiedKey, 'plan' | 'residency' | 'privacyMode'>,
  period: { start: Date; end: Date },
  standing: Standing,
  usage: PeriodUsage,
): UsageReport {
  const { window, limits } = standing;
  const allowance = limits.monthlyTokens;
  const used = usage.billableTokens;
  return {
    period: { start: isoWithOffset(period.start), end: isoWithOffset(period.end) },
    plan: key.plan,
    residency: residencyFromProto(key.residency) ?? 'unknown',
    privacy_mode: privacyModeFromProto(key.privacyMode) ?? 'unknown',
    tokens: {
      allowance,
      used,
      remaining: Math.max(0, allowance - used),
      percent_used: Math.round((used / allowance) * 100 * 10_000) / 10_000,
      overage_allowed: limits.overage,
    },
    rate_limit: {
      requests_per_minute: limits.requestsPerMinute,
      remaining: window.remaining,
      concurrency: limits.concurrency,
    },
    by_model: usage.byModel.map((line) => ({
      model: line.model,
      requests: line.requests,
      billable_tokens: line.billableTokens,
      cost_gbp: roundGbp(line.costGbp || '0'),
    })),
  };
}
