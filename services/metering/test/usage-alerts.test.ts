import { usageEvents } from '../src/webhooks/usage-alerts';
import type { PeriodMovement, UsageSubscriber } from '../src/webhooks/usage-alerts';

const now = new Date('2026-11-28T10:00:00.000Z');
const subscriber = (overrides: Partial<UsageSubscriber> = {}): UsageSubscriber => ({
  endpointId: 'whep_1',
  accountId: 'acct_1',
  eventTypes: ['usage.threshold_crossed', 'usage.ceiling_reached'],
  thresholdsPercent: [80, 100],
  ceilingOverride: null,
  ...overrides,
});
const movement = (before: bigint, after: bigint): PeriodMovement => ({
  accountId: 'acct_1',
  periodStart: '2026-11-01',
  before,
  after,
  allowanceTokens: 1000n,
  plan: 'pro',
});
const types = (entries: ReturnType<typeof usageEvents>) => entries.map((entry) => entry.dedupeKey);

describe('usageEvents', () => {
  it('raises a threshold when usage goes from below it to at or above it, once per period by its dedupe key', () => {
    const events = usageEvents(movement(799n, 800n), subscriber(), new Map(), now);
    expect(types(events)).toEqual(['usage.threshold_crossed:2026-11-01:80']);
    expect(events[0]!.payload).toEqual({
      type: 'usage.threshold_crossed',
      timestamp: '2026-11-28T10:00:00.000Z',
      data: {
        account_id: 'acct_1',
        environment: 'live',
        period_start: '2026-11-01',
        allowance_tokens: 1000,
        used_tokens: 800,
        threshold_percent: 80,
      },
    });
  });

  it('raises nothing for a movement that stays on one side of every line', () => {
    expect(usageEvents(movement(800n, 999n), subscriber(), new Map(), now)).toEqual([]);
    expect(usageEvents(movement(0n, 799n), subscriber(), new Map(), now)).toEqual([]);
  });

  it('raises every line a single movement passes, and the ceiling (twice the allowance by default)', () => {
    expect(types(usageEvents(movement(10n, 2500n), subscriber(), new Map(), now))).toEqual([
      'usage.threshold_crossed:2026-11-01:80',
      'usage.threshold_crossed:2026-11-01:100',
      'usage.ceiling_reached:2026-11-01:ceiling',
    ]);
  });

  it("takes the account's ceiling override, else the plan's", () => {
    const only = subscriber({ eventTypes: ['usage.ceiling_reached'] });
    expect(types(usageEvents(movement(1000n, 1200n), { ...only, ceilingOverride: 1100n }, new Map(), now))).toEqual([
      'usage.ceiling_reached:2026-11-01:ceiling',
    ]);
    expect(usageEvents(movement(1000n, 1200n), only, new Map([['pro', 1500]]), now)).toEqual([]);
    expect(types(usageEvents(movement(1400n, 1500n), only, new Map([['pro', 1500]]), now))).toHaveLength(1);
  });

  it('raises only the event types the endpoint chose', () => {
    expect(usageEvents(movement(0n, 5000n), subscriber({ eventTypes: ['key.revoked'] }), new Map(), now)).toEqual([]);
  });
});
