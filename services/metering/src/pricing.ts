import type { GatewayConfig } from '@gw/config';
import { KeyEnvironment, weightedInputTokensExact } from '@gw/vocabulary';

/**
 * Prices one request in GBP, exactly. No floating point touches money: prices are read as decimals
 * (the shortest decimal that names the configured number, so `0.8` is exactly 8/10), costs are
 * integers of 10⁻¹⁰ GBP (the scale of the `numeric(24,10)` columns), all arithmetic is BigInt.
 *
 *   weighted input = input + ceil(0.10 × cache_read) + ceil(1.25 × cache_write)
 *   overage        = max(0, before + billable − allowance) − max(0, before − allowance)
 *                    (live events with overage enabled only; else 0)
 *   cost (GBP)     = ( weighted input × model input price
 *                    + output × model output price
 *                    + overage × plan overage price ) / 10⁶          (prices in GBP per million tokens)
 *
 * `before` is the account's live billable tokens in the billing period before this event, `billable`
 * the event's billable tokens (what the allowance was charged with). Test traffic costs 0 and has no
 * overage. The sum is exact whenever every price has at most 4 decimals (a price per million tokens
 * with 4 decimals gives at most 10 decimals per token); a price with more is rounded once, half up,
 * on the request's total.
 */

/** 10⁻¹⁰ GBP per unit: the scale of cost_gbp in PostgreSQL. */
export const gbpScale = 10;
const gbpUnit = 10n ** BigInt(gbpScale);
/** Prices are per million tokens: 10⁶ = 10^perMillionDigits. */
const perMillionDigits = 6;

/** A non-negative decimal: units × 10^-scale. */
export interface Decimal {
  units: bigint;
  scale: number;
}

/** The exact decimal of a configured number, as JavaScript writes it (shortest round trip). */
export function decimalOf(value: number): Decimal {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`not a price: ${value}`);
  const [mantissa = '0', exponentText] = String(value).toLowerCase().split('e');
  const exponent = exponentText === undefined ? 0 : Number(exponentText);
  const [whole = '0', fraction = ''] = mantissa.split('.');
  const scale = fraction.length - exponent;
  const digits = BigInt(whole + fraction);
  return scale >= 0 ? { units: digits, scale } : { units: digits * 10n ** BigInt(-scale), scale: 0 };
}

/** An amount of 10⁻¹⁰ GBP as the decimal string numeric(24,10) takes and gives, e.g. "0.0012000000". */
export function formatGbp(amount: bigint): string {
  const sign = amount < 0n ? '-' : '';
  const magnitude = amount < 0n ? -amount : amount;
  return `${sign}${magnitude / gbpUnit}.${(magnitude % gbpUnit).toString().padStart(gbpScale, '0')}`;
}

/** The tokens of a request beyond the allowance, given the period's billable tokens before it. */
export function overageTokens(before: bigint, billable: bigint, allowance: bigint): bigint {
  const beyond = (total: bigint) => (total > allowance ? total - allowance : 0n);
  return beyond(before + billable) - beyond(before);
}

/** Σ tokens × price (GBP per million tokens), in 10⁻¹⁰ GBP; exact, or rounded half up once (see top). */
export function costOf(terms: ReadonlyArray<readonly [tokens: bigint, price: Decimal]>): bigint {
  // Every term at the finest price scale, and at least 4 (= 10 − 6) so that the divisor below is an integer.
  const scale = Math.max(gbpScale - perMillionDigits, ...terms.map(([, price]) => price.scale));
  let numerator = 0n;
  for (const [tokens, price] of terms) numerator += tokens * price.units * 10n ** BigInt(scale - price.scale);
  // numerator × 10^-(scale + 6) GBP = numerator / 10^(scale + 6 − 10) units of 10⁻¹⁰ GBP.
  const divisor = 10n ** BigInt(scale + perMillionDigits - gbpScale);
  return (numerator + divisor / 2n) / divisor;
}

export interface ModelPrices {
  input: Decimal;
  output: Decimal;
}

/** The prices of the gateway configuration; a reload of the YAML replaces both tables. */
export interface PriceList {
  models: ReadonlyMap<string, ModelPrices>;
  /** Overage price per plan id. */
  overage: ReadonlyMap<string, Decimal>;
}

export function priceList(config: GatewayConfig): PriceList {
  return {
    models: new Map(
      config.models.map((model) => [
        model.alias,
        { input: decimalOf(model.pricing.inputGbpPerMtok), output: decimalOf(model.pricing.outputGbpPerMtok) },
      ]),
    ),
    overage: new Map(config.plans.map((plan) => [plan.id, decimalOf(plan.overage.gbpPerMtok)])),
  };
}

/** What pricing reads of a usage event. */
export interface PricedEvent {
  environment: KeyEnvironment;
  model: string;
  plan: string | null;
  inputTokens: bigint;
  outputTokens: bigint;
  cacheReadInputTokens: bigint;
  cacheCreationInputTokens: bigint;
  billableTokens: bigint;
  allowanceTokens: bigint;
  overageEnabled: boolean;
}

/** Why an event was recorded at cost 0 although it is live traffic. */
export type UnpricedReason = 'unknown_model' | 'unknown_plan';

export interface Price {
  /** In 10⁻¹⁰ GBP. */
  costGbp: bigint;
  overageTokens: bigint;
  /** Set when the configuration cannot price the event: it is still recorded, at cost 0. */
  unpriced?: UnpricedReason;
}

/**
 * The cost of one request. `billableBefore` is the account's live billable tokens in the event's
 * billing period before this event. The plan is looked up only when overage is enabled: it is
 * what prices the overage.
 */
export function priceEvent(prices: PriceList, event: PricedEvent, billableBefore: bigint): Price {
  if (event.environment === KeyEnvironment.test) return { costGbp: 0n, overageTokens: 0n };
  const overage = event.overageEnabled
    ? overageTokens(billableBefore, event.billableTokens, event.allowanceTokens)
    : 0n;
  const model = prices.models.get(event.model);
  if (!model) return { costGbp: 0n, overageTokens: overage, unpriced: 'unknown_model' };
  const terms: [bigint, Decimal][] = [
    [weightedInputTokensExact(event), model.input],
    [event.outputTokens, model.output],
  ];
  if (event.overageEnabled) {
    const overagePrice = event.plan === null ? undefined : prices.overage.get(event.plan);
    if (!overagePrice) return { costGbp: 0n, overageTokens: overage, unpriced: 'unknown_plan' };
    terms.push([overage, overagePrice]);
  }
  return { costGbp: costOf(terms), overageTokens: overage };
}
