/**
 * The gateway's shared words and rules, defined once. Every service, gwctl and the dashboard take them from
 * here, the SQL checks are tested against these lists, and a lint rule refuses a literal of a residency tier,
 * privacy mode or key environment anywhere else (docs/conventions.md). This entry has no runtime dependency,
 * so that the dashboard bundles it as it is; the proto codecs are in `@gw/vocabulary/proto`.
 */

/** Where a key's traffic may be served: the jurisdiction of its pools. */
export const residencyTiers = ['uk', 'eu'] as const;
export type ResidencyTier = (typeof residencyTiers)[number];
/** Each tier by name, for code that means one of them: `ResidencyTier.eu`. */
export const ResidencyTier = namesOf(residencyTiers);

/** What the gateway does to personal data in a key's requests (docs/decisions.md). */
export const privacyModes = ['off', 'flag', 'redact', 'tokenise'] as const;
export type PrivacyMode = (typeof privacyModes)[number];
export const PrivacyMode = namesOf(privacyModes);

/** A key's environment: live traffic is billed and counts against the allowance, test traffic is not. */
export const keyEnvironments = ['live', 'test'] as const;
export type KeyEnvironment = (typeof keyEnvironments)[number];
export const KeyEnvironment = namesOf(keyEnvironments);

export const isResidencyTier = (value: unknown): value is ResidencyTier => isOneOf(residencyTiers, value);
export const isPrivacyMode = (value: unknown): value is PrivacyMode => isOneOf(privacyModes, value);
export const isKeyEnvironment = (value: unknown): value is KeyEnvironment => isOneOf(keyEnvironments, value);

/** `"a", "b" or "c"` (or unquoted: `a, b or c`): the words a field accepts, for its error message. */
export function expectedOneOf(words: readonly string[], options: { quoted: boolean } = { quoted: true }): string {
  const quoted = options.quoted ? words.map((word) => `"${word}"`) : [...words];
  return quoted.length < 2 ? quoted.join('') : `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}`;
}

/** The billing period of an instant: the calendar month in UTC that holds it. */
export interface BillingPeriod {
  /** First instant of the month. */
  start: Date;
  /** First instant of the next month (exclusive end). */
  end: Date;
  /** The first day as PostgreSQL's `date` and the usage API take it: `2026-11-01`. */
  startDay: string;
  /** `2026-11`: the month alone, for keys and labels. */
  month: string;
}

export function billingPeriodOf(at: Date): BillingPeriod {
  const year = at.getUTCFullYear();
  const month = at.getUTCMonth();
  const start = monthStart(year, month);
  const startDay = start.toISOString().slice(0, 10);
  return { start, end: monthStart(year, month + 1), startDay, month: startDay.slice(0, 7) };
}

/** Midnight UTC on the first of a month (`Date.UTC` would read the years 0 to 99 as 1900 to 1999). */
function monthStart(year: number, month: number): Date {
  const start = new Date(0);
  start.setUTCFullYear(year, month, 1);
  return start;
}

/**
 * The billing period whose first day is `startDay` (`YYYY-MM-01`), or undefined for anything else. The year
 * stays within what PostgreSQL's `date` and JavaScript's `Date` both hold.
 */
export function billingPeriodStartingOn(startDay: string): BillingPeriod | undefined {
  const match = /^(\d{4})-(\d{2})-01$/.exec(startDay);
  const [year, month] = [Number(match?.[1]), Number(match?.[2])];
  if (!match || year < 1 || month < 1 || month > 12) return undefined;
  return billingPeriodOf(monthStart(year, month - 1));
}

/**
 * How cached input weighs against the allowance and the bill, as a fraction of an input token (each weighted
 * count rounded up): a cache read costs 10 %, a cache write 125 %.
 */
export const cacheReadWeight = { numerator: 1, denominator: 10 } as const;
export const cacheWriteWeight = { numerator: 5, denominator: 4 } as const;

/** Input tokens with the cache weighting applied: input + ⌈10 % of reads⌉ + ⌈125 % of writes⌉. */
export function weightedInputTokens(counts: {
  inputTokens: number;
  cacheReadInputTokens: number;
  cacheCreationInputTokens: number;
}): number {
  const weigh = (count: number, weight: { numerator: number; denominator: number }) =>
    Math.ceil((count * weight.numerator) / weight.denominator);
  return (
    counts.inputTokens +
    weigh(counts.cacheReadInputTokens, cacheReadWeight) +
    weigh(counts.cacheCreationInputTokens, cacheWriteWeight)
  );
}

/** The same weighting in exact integers, for money. */
export function weightedInputTokensExact(counts: {
  inputTokens: bigint;
  cacheReadInputTokens: bigint;
  cacheCreationInputTokens: bigint;
}): bigint {
  const weigh = (count: bigint, weight: { numerator: number; denominator: number }) => {
    const denominator = BigInt(weight.denominator);
    return (count * BigInt(weight.numerator) + denominator - 1n) / denominator;
  };
  return (
    counts.inputTokens +
    weigh(counts.cacheReadInputTokens, cacheReadWeight) +
    weigh(counts.cacheCreationInputTokens, cacheWriteWeight)
  );
}

/** What a caller may store, in characters (code points) after trimming: an account's or a key's name. */
export const maxNameChars = 200;
/** A model id, in a request body or a key's allowed models. */
export const maxModelIdChars = 256;
/** A key's allowed models. */
export const maxAllowedModels = 1000;

function namesOf<const Words extends readonly string[]>(words: Words): { readonly [Word in Words[number]]: Word } {
  return Object.freeze(Object.fromEntries(words.map((word) => [word, word]))) as {
    readonly [Word in Words[number]]: Word;
  };
}

function isOneOf(words: readonly string[], value: unknown): boolean {
  return typeof value === 'string' && words.includes(value);
}
