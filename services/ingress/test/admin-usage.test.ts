import { create, meteringv1 } from '@gw/proto';
import { accountUsageResource } from '../src/admin/resources';

const period = { start: new Date('2026-11-01T00:00:00Z'), end: new Date('2026-12-01T00:00:00Z') };

const facts = (billableTokens: bigint, allowance: number) => ({
  period,
  plan: 'pro',
  environment: 'live' as const,
  allowance,
  overageAllowed: true,
  usage: create(meteringv1.GetUsageResponseSchema, {
    billableTokens,
    byModel: [{ model: 'claude-sonnet-5', requests: 3n, billableTokens, costGbp: '0.0012345000' }],
  }),
  days: [
    create(meteringv1.DayUsageSchema, { day: '2026-11-02', requests: 1n, billableTokens: 10n }),
    create(meteringv1.DayUsageSchema, { day: '2026-11-24', requests: 2n, billableTokens: billableTokens - 10n }),
  ],
});

describe('accountUsageResource', () => {
  it("reports GET /v1/usage's numbers, the overage and the days", () => {
    expect(accountUsageResource(facts(400n, 1000))).toEqual({
      period: { start: '2026-11-01T00:00:00.000Z', end: '2026-12-01T00:00:00.000Z' },
      plan: 'pro',
      environment: 'live',
      tokens: { allowance: 1000, used: 400, remaining: 600, percent_used: 40, overage_allowed: true, overage: 0 },
      by_model: [{ model: 'claude-sonnet-5', requests: 3, billable_tokens: 400, cost_gbp: 0.0012 }],
      daily: [
        { day: '2026-11-02', requests: 1, billable_tokens: 10 },
        { day: '2026-11-24', requests: 2, billable_tokens: 390 },
      ],
    });
  });

  it('counts the tokens past the allowance as overage, with nothing remaining', () => {
    expect(accountUsageResource(facts(1500n, 1000)).tokens).toEqual({
      allowance: 1000,
      used: 1500,
      remaining: 0,
      percent_used: 150,
      overage_allowed: true,
      overage: 500,
    });
  });
});
