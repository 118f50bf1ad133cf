import { commonv1, create, meteringv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import { periodUsageQuery } from '../src/server';

const request = (init: MessageInitShape<typeof meteringv1.GetUsageRequestSchema>) =>
  create(meteringv1.GetUsageRequestSchema, {
    accountId: 'acct_1',
    periodStart: '2026-03-01',
    environment: commonv1.Environment.LIVE,
    ...init,
  });

describe('periodUsageQuery', () => {
  it('reads the account, the period and the environment', () => {
    expect(periodUsageQuery(request({}))).toEqual({
      ok: true,
      value: { accountId: 'acct_1', periodStart: '2026-03-01', environment: 'live' },
    });
    expect(periodUsageQuery(request({ environment: commonv1.Environment.TEST }))).toMatchObject({
      ok: true,
      value: { environment: 'test' },
    });
  });

  it.each([
    ['no account', { accountId: '' }, 'account_id: required.'],
    ['a day other than the first', { periodStart: '2026-03-02' }, /^period_start: /],
    ['a month 13', { periodStart: '2026-13-01' }, /^period_start: /],
    ['year 0', { periodStart: '0000-01-01' }, /^period_start: /],
    ['a timestamp', { periodStart: '2026-03-01T00:00:00Z' }, /^period_start: /],
    ['no period', { periodStart: '' }, /^period_start: /],
    ['no environment', { environment: commonv1.Environment.UNSPECIFIED }, 'environment: expected live or test.'],
  ])('refuses %s as invalid_request_error', (_case, init, message) => {
    const query = periodUsageQuery(request(init));
    expect(query.ok).toBe(false);
    if (!query.ok) {
      expect(query.error.type).toBe('invalid_request_error');
      expect(query.error.message).toMatch(message);
    }
  });
});
