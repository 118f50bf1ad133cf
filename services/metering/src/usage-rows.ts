import { maxTokenCount } from '@gw/usage';
import { eventsv1, fromBinary } from '@gw/proto';
import { billingPeriodOf } from '@gw/vocabulary';
import type { KeyEnvironment } from '@gw/vocabulary';
import { environmentFromProto } from '@gw/vocabulary/proto';
import { err, ok } from '@gw/errors';
import type { Result } from '@gw/errors';

/** One usage_events row: counts and ids only, never content. */
export interface UsageRow {
  eventId: string;
  accountId: string;
  keyId: string;
  environment: KeyEnvironment;
  model: string;
  poolId: string;
  region: string;
  inputTokens: bigint;
  outputTokens: bigint;
  cacheReadInputTokens: bigint;
  cacheCreationInputTokens: bigint;
  billableTokens: bigint;
  outcome: string;
  errorType: string | null;
  streamed: boolean;
  startedAt: Date;
  endedAt: Date;
  /** First day of the UTC calendar month of endedAt, as YYYY-MM-DD: the billing period. */
  periodStart: string;
  /** The account's plan when the request was admitted; null when the producer did not say. */
  plan: string | null;
  /** The allowance and overage in force when the request was admitted: they price the overage. */
  allowanceTokens: bigint;
  overageEnabled: boolean;
  /** True when a count was above the plausible bound and was capped to it, as quota charged it (@gw/usage). */
  capped: boolean;
}

/** A row with its price (see pricing.ts). */
export interface PricedRow extends UsageRow {
  /** In 10⁻¹⁰ GBP. */
  costGbp: bigint;
  overageTokens: bigint;
}

/** One usage_aggregates row's increments. */
export interface AggregateDelta {
  accountId: string;
  keyId: string;
  model: string;
  environment: KeyEnvironment;
  periodStart: string;
  requests: bigint;
  inputTokens: bigint;
  outputTokens: bigint;
  cacheReadInputTokens: bigint;
  cacheCreationInputTokens: bigint;
  billableTokens: bigint;
  /** In 10⁻¹⁰ GBP. */
  costGbp: bigint;
  overageTokens: bigint;
}

/** The ids of an event that could be decoded but not stored, for the log line that reports it. */
export interface RejectedEvent {
  reason: string;
  eventId?: string;
  accountId?: string;
}

/** The outcome as stored; one added to the enum later is kept by number rather than refused. */
function outcomeName(outcome: eventsv1.Outcome): string {
  switch (outcome) {
    case eventsv1.Outcome.UNSPECIFIED:
      return 'unspecified';
    case eventsv1.Outcome.SUCCESS:
      return 'success';
    case eventsv1.Outcome.UPSTREAM_ERROR:
      return 'upstream_error';
    case eventsv1.Outcome.CLIENT_CANCELLED:
      return 'client_cancelled';
    case eventsv1.Outcome.REVOKED:
      return 'revoked';
    case eventsv1.Outcome.GATEWAY_ERROR:
      return 'gateway_error';
    default:
      return `outcome_${Number(outcome)}`;
  }
}

// The bound every service applies (@gw/usage): a count above it is stored capped to it, as quota charged it.
const maxTokens = BigInt(maxTokenCount);
const bounded = (count: bigint): bigint => (count > maxTokens ? maxTokens : count);

// Timestamps PostgreSQL and Date both hold; anything outside is a producer bug, not a request.
const earliestMs = Date.UTC(2000, 0, 1);
const latestMs = Date.UTC(9999, 11, 31);

function instant(unixMs: bigint, field: string): Result<Date, string> {
  const ms = Number(unixMs);
  return ms >= earliestMs && ms <= latestMs ? ok(new Date(ms)) : err(`${field} is out of range`);
}

/**
 * Checks a decoded event and maps it to its row. Refuses what would make the INSERT fail (and so
 * block the partition): a NUL character in a text field, an impossible timestamp, a negative count.
 */
export function toUsageRow(event: eventsv1.UsageEvent): Result<UsageRow, string> {
  const required = { event_id: event.eventId, account_id: event.accountId, key_id: event.keyId, model: event.model };
  for (const [field, value] of Object.entries(required)) {
    if (value.length === 0) return err(`${field} is empty`);
  }
  const texts = [
    event.eventId,
    event.accountId,
    event.keyId,
    event.model,
    event.poolId,
    event.region,
    event.errorType,
    event.plan,
  ];
  if (texts.some((text) => text.includes('\u0000'))) return err('a text field contains a NUL character');

  const environment = environmentFromProto(event.environment);
  if (!environment) return err('environment is not live or test');

  const counts = [
    event.inputTokens,
    event.outputTokens,
    event.cacheReadInputTokens,
    event.cacheCreationInputTokens,
    event.billableTokens,
  ];
  if (counts.some((count) => count < 0n)) return err('a token count is negative');

  const startedAt = instant(event.startedAtUnixMs, 'started_at');
  if (!startedAt.ok) return startedAt;
  const endedAt = instant(event.endedAtUnixMs, 'ended_at');
  if (!endedAt.ok) return endedAt;

  return ok({
    eventId: event.eventId,
    accountId: event.accountId,
    keyId: event.keyId,
    environment,
    model: event.model,
    poolId: event.poolId,
    region: event.region,
    inputTokens: bounded(event.inputTokens),
    outputTokens: bounded(event.outputTokens),
    cacheReadInputTokens: bounded(event.cacheReadInputTokens),
    cacheCreationInputTokens: bounded(event.cacheCreationInputTokens),
    billableTokens: bounded(event.billableTokens),
    outcome: outcomeName(event.outcome),
    errorType: event.errorType.length > 0 ? event.errorType : null,
    streamed: event.streamed,
    startedAt: startedAt.value,
    endedAt: endedAt.value,
    periodStart: billingPeriodOf(endedAt.value).startDay,
    plan: event.plan.length > 0 ? event.plan : null,
    allowanceTokens: event.allowanceTokens,
    overageEnabled: event.overageEnabled,
    capped: counts.some((count) => count > maxTokens),
  });
}

/** Decodes a Kafka message value (protobuf binary of gateway.events.v1.UsageEvent) into its row. */
export function decodeUsageRow(value: Uint8Array | null): Result<UsageRow, RejectedEvent> {
  if (value === null) return err({ reason: 'the message has no value' });
  let event: eventsv1.UsageEvent;
  try {
    event = fromBinary(eventsv1.UsageEventSchema, value);
  } catch (error) {
    return err({ reason: `not a gateway.events.v1.UsageEvent: ${(error as Error).message}` });
  }
  const row = toUsageRow(event);
  if (row.ok) return row;
  return err({ reason: row.error, eventId: event.eventId || undefined, accountId: event.accountId || undefined });
}

/** The first row of each event id: a chunk may carry a producer's retry of the same event. */
export function firstOfEachEvent(rows: readonly UsageRow[]): UsageRow[] {
  const seen = new Set<string>();
  return rows.filter((row) => {
    if (seen.has(row.eventId)) return false;
    seen.add(row.eventId);
    return true;
  });
}

/**
 * Sums rows per aggregate key. Sorted by that key so that concurrent transactions lock aggregate
 * rows in the same order and cannot deadlock.
 */
export function aggregateRows(rows: readonly PricedRow[]): AggregateDelta[] {
  const byKey = new Map<string, AggregateDelta>();
  for (const row of rows) {
    const key = JSON.stringify([row.accountId, row.periodStart, row.environment, row.model, row.keyId]);
    const delta = byKey.get(key);
    if (delta) {
      delta.requests += 1n;
      delta.inputTokens += row.inputTokens;
      delta.outputTokens += row.outputTokens;
      delta.cacheReadInputTokens += row.cacheReadInputTokens;
      delta.cacheCreationInputTokens += row.cacheCreationInputTokens;
      delta.billableTokens += row.billableTokens;
      delta.costGbp += row.costGbp;
      delta.overageTokens += row.overageTokens;
    } else {
      byKey.set(key, {
        accountId: row.accountId,
        keyId: row.keyId,
        model: row.model,
        environment: row.environment,
        periodStart: row.periodStart,
        requests: 1n,
        inputTokens: row.inputTokens,
        outputTokens: row.outputTokens,
        cacheReadInputTokens: row.cacheReadInputTokens,
        cacheCreationInputTokens: row.cacheCreationInputTokens,
        billableTokens: row.billableTokens,
        costGbp: row.costGbp,
        overageTokens: row.overageTokens,
      });
    }
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, delta]) => delta);
}
