import { boundedCount, maxTokenCount } from '@gw/usage';
import { commonv1, create, eventsv1, toBinary } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import { aggregateRows, decodeUsageRow, firstOfEachEvent, toUsageRow } from '../src/usage-rows';
import type { PricedRow, UsageRow } from '../src/usage-rows';

const endOfMarch = Date.UTC(2026, 2, 31, 23, 59, 59, 999);

function usageEvent(init: MessageInitShape<typeof eventsv1.UsageEventSchema> = {}): eventsv1.UsageEvent {
  return create(eventsv1.UsageEventSchema, {
    eventId: 'req_1',
    accountId: 'acct_1',
    keyId: 'key_1',
    environment: commonv1.Environment.LIVE,
    model: 'claude-sonnet',
    poolId: 'anthropic-eu-west',
    region: 'eu-west',
    inputTokens: 100n,
    outputTokens: 20n,
    cacheReadInputTokens: 10n,
    cacheCreationInputTokens: 4n,
    billableTokens: 126n,
    outcome: eventsv1.Outcome.SUCCESS,
    startedAtUnixMs: BigInt(endOfMarch - 1500),
    endedAtUnixMs: BigInt(endOfMarch),
    streamed: true,
    plan: 'pro',
    allowanceTokens: 1000n,
    overageEnabled: true,
    ...init,
  });
}

function row(init: MessageInitShape<typeof eventsv1.UsageEventSchema> = {}): UsageRow {
  const result = toUsageRow(usageEvent(init));
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

/** A row priced at one ten-thousandth of a penny per billable token, with no overage. */
function priced(init: MessageInitShape<typeof eventsv1.UsageEventSchema> = {}, overageTokens = 0n): PricedRow {
  const base = row(init);
  return { ...base, costGbp: base.billableTokens * 10_000n, overageTokens };
}

describe('toUsageRow', () => {
  it('maps every field of the event', () => {
    expect(row()).toEqual({
      eventId: 'req_1',
      accountId: 'acct_1',
      keyId: 'key_1',
      environment: 'live',
      model: 'claude-sonnet',
      poolId: 'anthropic-eu-west',
      region: 'eu-west',
      inputTokens: 100n,
      outputTokens: 20n,
      cacheReadInputTokens: 10n,
      cacheCreationInputTokens: 4n,
      billableTokens: 126n,
      outcome: 'success',
      errorType: null,
      streamed: true,
      startedAt: new Date(endOfMarch - 1500),
      endedAt: new Date(endOfMarch),
      periodStart: '2026-03-01',
      plan: 'pro',
      allowanceTokens: 1000n,
      overageEnabled: true,
      capped: false,
    });
  });

  it('caps an implausible count to the bound quota charged, and says so (the same rule as @gw/usage)', () => {
    const huge = 5n * 10n ** 12n;
    const capped = row({ cacheReadInputTokens: huge, billableTokens: huge });
    expect(capped).toMatchObject({ cacheReadInputTokens: BigInt(maxTokenCount), capped: true });
    expect(capped.billableTokens).toBe(BigInt(boundedCount(Number(huge))));
    expect(row({ outputTokens: BigInt(maxTokenCount) }).capped).toBe(false);
  });

  it('keeps no plan as null, and the allowance and overage of an event from before they existed', () => {
    expect(row({ plan: '', allowanceTokens: 0n, overageEnabled: false })).toMatchObject({
      plan: null,
      allowanceTokens: 0n,
      overageEnabled: false,
    });
  });

  it('names the environment and the outcome, and keeps an error type', () => {
    const failed = row({
      environment: commonv1.Environment.TEST,
      outcome: eventsv1.Outcome.UPSTREAM_ERROR,
      errorType: 'overloaded_error',
    });
    expect(failed).toMatchObject({ environment: 'test', outcome: 'upstream_error', errorType: 'overloaded_error' });
    expect(row({ outcome: eventsv1.Outcome.CLIENT_CANCELLED }).outcome).toBe('client_cancelled');
    expect(row({ outcome: eventsv1.Outcome.REVOKED }).outcome).toBe('revoked');
    expect(row({ outcome: 9 as eventsv1.Outcome }).outcome).toBe('outcome_9');
  });

  it.each([
    ['an empty event id', { eventId: '' }, 'event_id is empty'],
    ['an empty account id', { accountId: '' }, 'account_id is empty'],
    [
      'an unspecified environment',
      { environment: commonv1.Environment.UNSPECIFIED },
      'environment is not live or test',
    ],
    ['a NUL character', { model: 'claude\u0000' }, 'a text field contains a NUL character'],
    ['a NUL character in the plan', { plan: 'pro\u0000' }, 'a text field contains a NUL character'],
    ['a negative count', { outputTokens: -1n }, 'a token count is negative'],
    ['no end time', { endedAtUnixMs: 0n }, 'ended_at is out of range'],
    ['an end time past year 9999', { endedAtUnixMs: 300_000_000_000_000n }, 'ended_at is out of range'],
  ])('refuses %s', (_case, init, reason) => {
    expect(toUsageRow(usageEvent(init))).toEqual({ ok: false, error: reason });
  });
});

describe('decodeUsageRow', () => {
  it('decodes the protobuf binary the producer sends', () => {
    const decoded = decodeUsageRow(toBinary(eventsv1.UsageEventSchema, usageEvent()));
    expect(decoded).toEqual({ ok: true, value: row() });
  });

  it('reports bytes that are not a UsageEvent without their content', () => {
    const decoded = decodeUsageRow(Buffer.from([0xff, 0xff, 0xff]));
    expect(decoded.ok).toBe(false);
    if (!decoded.ok) {
      expect(decoded.error.reason).toMatch(/^not a gateway\.events\.v1\.UsageEvent/);
      expect(decoded.error.eventId).toBeUndefined();
    }
  });

  it('reports a missing value', () => {
    expect(decodeUsageRow(null)).toEqual({ ok: false, error: { reason: 'the message has no value' } });
  });

  it('names the ids of an event it cannot store', () => {
    const bytes = toBinary(eventsv1.UsageEventSchema, usageEvent({ environment: commonv1.Environment.UNSPECIFIED }));
    expect(decodeUsageRow(bytes)).toEqual({
      ok: false,
      error: { reason: 'environment is not live or test', eventId: 'req_1', accountId: 'acct_1' },
    });
  });
});

describe('firstOfEachEvent', () => {
  it('keeps the first row of each event id, in order', () => {
    const rows = [row({ eventId: 'a' }), row({ eventId: 'b' }), row({ eventId: 'a', inputTokens: 999n })];
    expect(firstOfEachEvent(rows)).toEqual([rows[0], rows[1]]);
  });
});

describe('aggregateRows', () => {
  it('sums requests, tokens, cost and overage per account, period, environment, model and key', () => {
    const march = priced({ eventId: 'a' });
    const marchAgain = priced({ eventId: 'b', inputTokens: 1n, outputTokens: 2n, billableTokens: 3n }, 3n);
    const april = priced({ eventId: 'c', endedAtUnixMs: BigInt(Date.UTC(2026, 3, 1)) });
    const otherKey = priced({ eventId: 'd', keyId: 'key_2' });
    const deltas = aggregateRows([march, april, marchAgain, otherKey]);
    expect(deltas).toHaveLength(3);
    expect(deltas).toContainEqual({
      accountId: 'acct_1',
      keyId: 'key_1',
      model: 'claude-sonnet',
      environment: 'live',
      periodStart: '2026-03-01',
      requests: 2n,
      inputTokens: 101n,
      outputTokens: 22n,
      cacheReadInputTokens: 20n,
      cacheCreationInputTokens: 8n,
      billableTokens: 129n,
      costGbp: 1_290_000n,
      overageTokens: 3n,
    });
    expect(deltas).toContainEqual(expect.objectContaining({ periodStart: '2026-04-01', requests: 1n }));
    expect(deltas).toContainEqual(expect.objectContaining({ keyId: 'key_2', requests: 1n }));
  });

  it('returns the same order whatever the order of the rows', () => {
    const rows = [
      priced({ eventId: 'a', accountId: 'acct_b' }),
      priced({ eventId: 'b', accountId: 'acct_a', model: 'z' }),
      priced({ eventId: 'c', accountId: 'acct_a', model: 'y' }),
    ];
    const keys = (deltas: ReturnType<typeof aggregateRows>) => deltas.map((d) => `${d.accountId}/${d.model}`);
    expect(keys(aggregateRows(rows))).toEqual(keys(aggregateRows([...rows].reverse())));
    expect(keys(aggregateRows(rows))).toEqual(['acct_a/y', 'acct_a/z', 'acct_b/claude-sonnet']);
  });
});
