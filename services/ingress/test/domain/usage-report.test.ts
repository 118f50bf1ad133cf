import { roundGbp, usageReportJson } from '../../src/domain/usage-report';
import type { UsageReport } from '../../src/domain/usage-report';

describe('roundGbp', () => {
  it('rounds an exact decimal to four places, half up', () => {
    expect(roundGbp('0.0012345000')).toBe(0.0012);
    expect(roundGbp('0.0012500000')).toBe(0.0013);
    expect(roundGbp('12.3456789012')).toBe(12.3457);
    expect(roundGbp('0')).toBe(0);
  });
});

describe('usageReportJson', () => {
  it('writes cost_gbp with exactly four decimals', () => {
    const report = { by_model: [{ model: 'm', requests: 1, billable_tokens: 2, cost_gbp: 0.1 }] } as UsageReport;
    expect(usageReportJson(report)).toBe(
      '{"by_model":[{"model":"m","requests":1,"billable_tokens":2,"cost_gbp":0.1000}]}',
    );
  });
});
