import Anthropic from '@anthropic-ai/sdk';
import { waitUntil, waitForRoomInMinute } from '@gw/testing';
import { harness } from './harness';
import { admin, rawRequest } from './http';

const h = harness();
const model = 'claude-sonnet-5';

interface UsageReport {
  period: { start: string; end: string };
  plan: string;
  residency: string;
  privacy_mode: string;
  tokens: { allowance: number; used: number; remaining: number; percent_used: number; overage_allowed: boolean };
  rate_limit: { requests_per_minute: number; remaining: number; concurrency: number };
  by_model: { model: string; requests: number; billable_tokens: number; cost_gbp: number }[];
}

async function usage(key: string): Promise<{ report: UsageReport; text: string; headers: Record<string, unknown> }> {
  const response = await rawRequest(`${h.baseUrl}/v1/usage`, { method: 'GET', headers: { 'x-api-key': key } });
  expect(response.status).toBe(200);
  return { report: JSON.parse(response.body) as UsageReport, text: response.body, headers: response.headers };
}

async function freshKey(environment: 'live' | 'test', limits: Record<string, unknown> = {}) {
  const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'usage', plan: 'pro' });
  if (Object.keys(limits).length > 0) await admin(h, 'PATCH', `/accounts/${account.body.id}/limits`, limits);
  const key = await admin<{ key: string }>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'usage',
    environment,
    residency: 'eu',
    privacy_mode: 'off',
  });
  return key.body.key;
}

const integer = (value: unknown) => typeof value === 'number' && Number.isInteger(value);

function checkShape(report: UsageReport, text: string): void {
  expect(Object.keys(report).sort()).toEqual(
    ['by_model', 'period', 'plan', 'privacy_mode', 'rate_limit', 'residency', 'tokens'].sort(),
  );
  expect(report.period.start).toMatch(/^\d{4}-\d\d-01T00:00:00\+00:00$/);
  expect(report.period.end).toMatch(/^\d{4}-\d\d-01T00:00:00\+00:00$/);
  const start = new Date(report.period.start);
  expect(new Date(report.period.end).getTime()).toBe(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
  expect(Date.now()).toBeGreaterThanOrEqual(start.getTime());
  expect(report.plan).toBe('pro');
  expect(report.residency).toBe('eu');
  expect(report.privacy_mode).toBe('off');
  const { tokens, rate_limit: rateLimit } = report;
  expect([tokens.allowance, tokens.used, tokens.remaining].every(integer)).toBe(true);
  expect(typeof tokens.percent_used).toBe('number');
  expect(typeof tokens.overage_allowed).toBe('boolean');
  expect(tokens.remaining).toBe(Math.max(0, tokens.allowance - tokens.used));
  expect(tokens.percent_used).toBeCloseTo((tokens.used / tokens.allowance) * 100, 4);
  expect([rateLimit.requests_per_minute, rateLimit.remaining, rateLimit.concurrency].every(integer)).toBe(true);
  for (const line of report.by_model) {
    expect(Object.keys(line).sort()).toEqual(['billable_tokens', 'cost_gbp', 'model', 'requests']);
    expect(integer(line.requests) && integer(line.billable_tokens)).toBe(true);
    expect(typeof line.cost_gbp).toBe('number');
  }
  for (const match of text.matchAll(/"cost_gbp":([^,}]+)/g)) expect(match[1]).toMatch(/^\d+\.\d{4}$/);
}

describe('GET /v1/usage', () => {
  it('reports a live key field by field, with a request visible within 2 s in tokens.used and by_model alike', async () => {
    const key = await freshKey('live', { monthly_tokens: 100_000 });
    const before = await usage(key);
    checkShape(before.report, before.text);
    expect(before.report.tokens).toEqual({
      allowance: 100_000,
      used: 0,
      remaining: 100_000,
      percent_used: 0,
      overage_allowed: true,
    });
    expect(before.report.by_model).toEqual([]);
    expect(before.headers['x-request-id']).toMatch(/^req_/);

    const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: key, maxRetries: 0 });
    const message = await sdk.messages.create({
      model,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'tokens for the usage report' }],
    });
    const endedAt = Date.now();
    const billable = message.usage.input_tokens + message.usage.output_tokens;
    const after = await waitUntil(
      () => usage(key),
      { what: 'the report to count the request', timeoutMs: 2_000 - (Date.now() - endedAt), intervalMs: 50 },
      (seen) => seen.report.tokens.used >= billable,
    );
    checkShape(after.report, after.text);
    expect(after.report.tokens.used).toBe(billable);
    expect(after.report.by_model).toEqual([
      { model, requests: 1, billable_tokens: billable, cost_gbp: expect.any(Number) },
    ]);
    // Sonnet 5 in the local configuration: 2.4 GBP per million input tokens, 12 per million output.
    const cost = (message.usage.input_tokens * 2.4 + message.usage.output_tokens * 12) / 1e6;
    expect(after.report.by_model[0]!.cost_gbp).toBeCloseTo(cost, 4);
    expect(after.report.tokens.percent_used).toBeCloseTo((billable / 100_000) * 100, 4);
  });

  it('reports a test key: its requests at cost 0, and no allowance used', async () => {
    const key = await freshKey('test');
    const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: key, maxRetries: 0 });
    await sdk.messages.create({ model, max_tokens: 16, messages: [{ role: 'user', content: 'stub' }] });
    const { report } = await waitUntil(
      () => usage(key),
      { what: 'the report to list the request', timeoutMs: 2_000, intervalMs: 50 },
      (seen) => seen.report.by_model.length > 0,
    );
    const { text } = await usage(key);
    checkShape(report, text);
    expect(report.tokens.used).toBe(0);
    expect(report.by_model).toEqual([{ model, requests: 1, billable_tokens: 0, cost_gbp: 0 }]);
  });

  it('is free: not rate limited and consuming nothing', async () => {
    const key = await freshKey('test', { requests_per_minute: 2 });
    await waitForRoomInMinute(3_000);
    const remaining = async () => (await usage(key)).report.rate_limit.remaining;
    const first = await remaining();
    for (let index = 0; index < 5; index += 1) await usage(key);
    expect(await remaining()).toBe(first);
    const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: key, maxRetries: 0 });
    const ask = () => sdk.messages.create({ model, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] });
    await ask().catch(() => undefined);
    await ask().catch(() => undefined);
    await expect(ask()).rejects.toBeInstanceOf(Anthropic.RateLimitError);
    const report = await usage(key);
    expect(report.report.rate_limit.remaining).toBe(0);
    expect(report.headers['anthropic-ratelimit-requests-remaining']).toBe('0');
  });

  it('refuses a bad key like every endpoint', async () => {
    const response = await rawRequest(`${h.baseUrl}/v1/usage`, { method: 'GET', headers: { 'x-api-key': 'nope' } });
    expect(response.status).toBe(401);
    expect(JSON.parse(response.body).error.type).toBe('authentication_error');
  });
});
