import { weightedInputTokens } from '@gw/vocabulary';

/**
 * The one bound on a request's token counts, applied by every service that records usage (ingress when it reads
 * the upstream's counts, quota when it charges the allowance, metering when it stores the row), so that the
 * Redis allowance, the PostgreSQL rows and `/v1/usage` always hold the same numbers for the same request.
 */

/**
 * Far beyond any request (a million-token context is 10^6), far below what would overflow the bigint sums or
 * the numeric(24,10) cost at any sane price. A count above it is implausible: it is capped to this, never
 * dropped, and the service that saw it counts it in a metric that is alerted on.
 */
export const maxTokenCount = 10 ** 12;

/** A request's counts as the upstream reported them (or as an event carries them). */
export interface UsageCounts {
  inputTokens: number;
  outputTokens: number;
  cacheReadInputTokens: number;
  cacheCreationInputTokens: number;
}

/** A count as billed: a whole number in [0, maxTokenCount] (negative or not a number: 0). */
export function boundedCount(count: number): number {
  if (!(count > 0)) return 0;
  return Math.min(Math.floor(count), maxTokenCount);
}

export const isImplausible = (count: number): boolean => count > maxTokenCount;

/** The counter each service keeps of the implausible counts it capped (one name, so that one alert reads all). */
export const usageCappedMetric = {
  name: 'gateway_usage_counts_capped_total',
  help: 'Usage records with a token count above the plausible bound (10^12), billed capped to it; alerted on.',
} as const;

/** Every count bounded, and whether any was implausible (to be counted and alerted on). */
export function boundedUsage(counts: UsageCounts): { counts: UsageCounts; capped: boolean } {
  const capped = [
    counts.inputTokens,
    counts.outputTokens,
    counts.cacheReadInputTokens,
    counts.cacheCreationInputTokens,
  ].some(isImplausible);
  return {
    counts: {
      inputTokens: boundedCount(counts.inputTokens),
      outputTokens: boundedCount(counts.outputTokens),
      cacheReadInputTokens: boundedCount(counts.cacheReadInputTokens),
      cacheCreationInputTokens: boundedCount(counts.cacheCreationInputTokens),
    },
    capped,
  };
}

/**
 * The weighted tokens a request costs the allowance (the weighted input of @gw/vocabulary + output, each count
 * bounded first), itself bounded: what quota charges and metering stores.
 */
export function billableTokens(counts: UsageCounts): number {
  const bounded = boundedUsage(counts).counts;
  return boundedCount(weightedInputTokens(bounded) + bounded.outputTokens);
}

export { estimateInputTokens } from './estimate';
