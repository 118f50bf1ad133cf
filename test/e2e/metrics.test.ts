import { waitUntil, waitForRoomInMinute } from '@gw/testing';
import { harness } from './harness';
import { admin, rawRequest } from './http';
import type { RawResponse } from './http';
import { scrape, total } from './prometheus';
import type { Sample } from './prometheus';

const h = harness();
const ingressMetrics = h.metricsUrls.ingress!;
const quotaMetrics = h.metricsUrls.quota!;
const model = 'claude-sonnet-5';

/** Every id this test made or was given: none may appear in any label of any service. */
const ids = new Set<string>();

interface Created {
  id: string;
  key?: string;
}

async function account(limits: Record<string, unknown> = {}): Promise<string> {
  const created = await admin<Created>(h, 'POST', '/accounts', { name: 'metrics', plan: 'pro' });
  ids.add(created.body.id);
  if (Object.keys(limits).length > 0) {
    expect((await admin(h, 'PATCH', `/accounts/${created.body.id}/limits`, limits)).status).toBe(200);
  }
  return created.body.id;
}

async function keyOf(accountId: string, extra: Record<string, unknown> = {}): Promise<{ id: string; key: string }> {
  const created = await admin<Created>(h, 'POST', '/keys', {
    account_id: accountId,
    name: 'metrics',
    environment: 'test',
    residency: 'eu',
    privacy_mode: 'off',
    ...extra,
  });
  expect(created.status).toBe(201);
  ids.add(created.body.id);
  ids.add(created.body.key!);
  return { id: created.body.id, key: created.body.key! };
}

async function ask(
  headers: Record<string, string>,
  options: { content?: string; stream?: boolean; model?: string } = {},
): Promise<RawResponse> {
  const response = await rawRequest(`${h.baseUrl}/v1/messages`, {
    headers,
    body: JSON.stringify({
      model: options.model ?? model,
      max_tokens: 16,
      stream: options.stream ?? false,
      messages: [{ role: 'user', content: options.content ?? 'hello metrics' }],
    }),
  });
  ids.add(String(response.headers['x-request-id']));
  return response;
}

/** A `gw-test:slow` stream held open once its first delta arrived; abort() disconnects the client. */
async function openSlowStream(key: string): Promise<{ status: number; abort(): void }> {
  const controller = new AbortController();
  const response = await fetch(`${h.baseUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      max_tokens: 16,
      stream: true,
      messages: [{ role: 'user', content: 'gw-test:slow' }],
    }),
    signal: controller.signal,
  });
  ids.add(response.headers.get('x-request-id') ?? '');
  if (response.status === 200) {
    const reader = response.body!.getReader();
    let text = '';
    while (!text.includes('content_block_delta')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString('utf8');
    }
  } else {
    await response.text();
  }
  return { status: response.status, abort: () => controller.abort() };
}

type Expected = [name: string, labels: Record<string, string>, delta: number];

/** Waits until every figure moved from `before` by exactly its delta (the edge counts once a response closes). */
async function expectMoved(metricsUrl: string, before: Sample[], expected: Expected[]): Promise<void> {
  const mismatches = (after: Sample[]) =>
    expected
      .map(([name, labels, delta]) => ({
        name,
        labels,
        delta,
        moved: total(after, name, labels) - total(before, name, labels),
      }))
      .filter((figure) => figure.moved !== figure.delta);
  await waitUntil(
    async () => mismatches(await scrape(metricsUrl)),
    { what: 'the metrics to move' },
    (left) => left.length === 0,
  );
}

const requests = (status: string, errorType: string) => ({
  route: 'messages',
  method: 'POST',
  status,
  error_type: errorType,
});

describe('ingress edge metrics', () => {
  beforeAll(async () => {
    // Before any figure is read: the stack answers (policy's catalogue has reached ingress).
    const { key } = await keyOf(await account());
    await waitUntil(
      async () => (await ask({ 'x-api-key': key })).status,
      { what: 'the gateway to serve' },
      (status) => status === 200,
    );
  });

  it('counts a whole and a streamed success: requests, durations, tokens, first token and added time', async () => {
    const { key } = await keyOf(await account());
    const before = await scrape(ingressMetrics);
    const whole = await ask({ 'x-api-key': key });
    expect(whole.status).toBe(200);
    const usage = (JSON.parse(whole.body) as { usage: { input_tokens: number; output_tokens: number } }).usage;
    const streamed = await ask({ 'x-api-key': key }, { stream: true });
    expect(streamed.status).toBe(200);
    const outputDeltas = streamed.body.split('event: content_block_delta').length - 1;
    const streamedInput = Number(/"input_tokens":(\d+)/.exec(streamed.body)![1]);
    await expectMoved(ingressMetrics, before, [
      ['gateway_http_requests_total', requests('200', 'none'), 2],
      // The key's residency tier (these keys are EU keys).
      ['gateway_http_requests_total', { ...requests('200', 'none'), tier: 'eu' }, 2],
      ['gateway_http_request_duration_seconds_count', { route: 'messages', streamed: 'false' }, 1],
      ['gateway_http_request_duration_seconds_count', { route: 'messages', streamed: 'true' }, 1],
      ['gateway_tokens_total', { model, environment: 'test', kind: 'input' }, usage.input_tokens + streamedInput],
      ['gateway_tokens_total', { model, environment: 'test', kind: 'output' }, usage.output_tokens + outputDeltas],
      ['gateway_tokens_total', { model, environment: 'live' }, 0],
      ['gateway_time_to_first_token_seconds_count', { model }, 1],
      ['gen_ai_server_time_to_first_token_seconds_count', { gen_ai_request_model: model }, 1],
      ['gen_ai_server_request_duration_seconds_count', { gen_ai_request_model: model, error_type: 'none' }, 2],
      ['gen_ai_client_token_usage_count', { gen_ai_request_model: model }, 4],
      ['gateway_added_latency_seconds_count', {}, 1],
      ['gateway_usage_events_total', { stage: 'handed' }, 2],
      ['gateway_usage_events_total', { stage: 'durable' }, 2],
      ['gateway_usage_events_total', { stage: 'acknowledged' }, 2],
    ]);
  });

  it('never puts a model name a caller sent in a label', async () => {
    const { key } = await keyOf(await account());
    const before = await scrape(ingressMetrics);
    expect((await ask({ 'x-api-key': key }, { model: 'not-a-catalogue-model-xyz' })).status).toBe(404);
    await expectMoved(ingressMetrics, before, [['gateway_http_requests_total', requests('404', 'not_found_error'), 1]]);
    expect((await (await fetch(ingressMetrics)).text()).includes('not-a-catalogue-model-xyz')).toBe(false);
  });

  it('counts upstream errors before and after the first byte by their error type', async () => {
    const { key } = await keyOf(await account());
    const before = await scrape(ingressMetrics);
    expect((await ask({ 'x-api-key': key }, { content: 'gw-test:error:overloaded_error' })).status).toBe(503);
    const streamFailure = await ask({ 'x-api-key': key }, { content: 'gw-test:stream-error', stream: true });
    expect(streamFailure.status).toBe(200);
    expect(streamFailure.body).toContain('event: error');
    await expectMoved(ingressMetrics, before, [
      ['gateway_http_requests_total', requests('503', 'overloaded_error'), 1],
      ['gateway_http_requests_total', requests('200', 'overloaded_error'), 1],
      ['gateway_http_requests_total', requests('200', 'none'), 0],
      ['gateway_added_latency_seconds_count', {}, 0],
    ]);
  });

  it('counts an upstream failure of a live request by what the caller was told (sim:error)', async () => {
    const { key } = await keyOf(await account(), { environment: 'live' });
    const routerMetrics = h.metricsUrls.router!;
    const before = await scrape(ingressMetrics);
    const routerBefore = await scrape(routerMetrics);
    const failed = await ask({ 'x-api-key': key }, { content: 'sim:error=503' });
    expect(failed.status).toBeGreaterThanOrEqual(500);
    const errorType = (JSON.parse(failed.body) as { error: { type: string } }).error.type;
    await expectMoved(ingressMetrics, before, [
      ['gateway_http_requests_total', requests(String(failed.status), errorType), 1],
      ['gateway_added_latency_seconds_count', {}, 0],
      ['gateway_usage_events_total', { stage: 'durable' }, 1],
    ]);
    const routerAfter = await scrape(routerMetrics);
    const failedAttempts = (samples: typeof routerAfter) =>
      total(samples, 'router_upstream_attempts_total') -
      total(samples, 'router_upstream_attempts_total', { outcome: 'accepted' });
    expect(failedAttempts(routerAfter) - failedAttempts(routerBefore)).toBeGreaterThanOrEqual(1);
  });

  it('counts key failures by reason', async () => {
    const accountId = await account();
    const revoked = await keyOf(accountId);
    await admin(h, 'POST', `/keys/${revoked.id}/revoke`);
    const expiresAt = Date.now() + 300;
    const expired = await keyOf(accountId, { expires_at: new Date(expiresAt).toISOString() });
    const fenced = await keyOf(accountId, { allowed_ips: ['198.51.100.0/24'] });
    const suspendedAccount = await account();
    const suspended = await keyOf(suspendedAccount);
    expect((await admin(h, 'POST', `/accounts/${suspendedAccount}/suspend`)).status).toBe(200);
    await waitUntil(() => Date.now() > expiresAt, { what: 'the key to expire' });

    const before = await scrape(ingressMetrics);
    expect((await ask({})).status).toBe(401);
    expect((await ask({ 'x-api-key': 'not-a-key' })).status).toBe(401);
    expect((await ask({ authorization: `Bearer gw_test_${'A'.repeat(32)}` })).status).toBe(401);
    expect((await ask({ 'x-api-key': revoked.key })).status).toBe(401);
    expect((await ask({ 'x-api-key': expired.key })).status).toBe(401);
    expect((await ask({ 'x-api-key': fenced.key })).status).toBe(403);
    expect((await ask({ 'x-api-key': suspended.key })).status).toBe(403);
    await expectMoved(ingressMetrics, before, [
      ['gateway_auth_failures_total', { reason: 'missing' }, 1],
      ['gateway_auth_failures_total', { reason: 'malformed' }, 1],
      ['gateway_auth_failures_total', { reason: 'unknown' }, 1],
      ['gateway_auth_failures_total', { reason: 'revoked' }, 1],
      ['gateway_auth_failures_total', { reason: 'expired' }, 1],
      ['gateway_auth_failures_total', { reason: 'ip_not_allowed' }, 1],
      ['gateway_auth_failures_total', { reason: 'suspended' }, 1],
      ['gateway_http_requests_total', requests('401', 'authentication_error'), 5],
      ['gateway_http_requests_total', requests('403', 'permission_error'), 2],
      // No key verified: the fixed tier of requests without one.
      ['gateway_http_requests_total', { ...requests('401', 'authentication_error'), tier: 'none' }, 5],
      ['gateway_http_requests_total', { ...requests('403', 'permission_error'), tier: 'none' }, 2],
    ]);
  });

  it('counts limit refusals by kind and residency refusals by tier', async () => {
    const perMinute = await keyOf(await account({ requests_per_minute: 1 }));
    const concurrency = await keyOf(await account({ concurrency: 1 }));
    const allowanceAccount = await account({ monthly_tokens: 1, hard_ceiling_tokens: 1_000_000, overage: false });
    const allowance = await keyOf(allowanceAccount, { environment: 'live' });
    const ceilingAccount = await account({ monthly_tokens: 1_000_000, hard_ceiling_tokens: 1, overage: true });
    const ceiling = await keyOf(ceilingAccount, { environment: 'live' });

    // The live requests that spend the allowance and the ceiling; refusals follow once quota charged them.
    const releases = total(await scrape(quotaMetrics), 'gateway_quota_redis_decision_seconds_count', {
      script: 'release',
    });
    expect((await ask({ 'x-api-key': allowance.key })).status).toBe(200);
    expect((await ask({ 'x-api-key': ceiling.key })).status).toBe(200);
    // The per-minute window is the clock's minute: its two requests must fall in one.
    await waitForRoomInMinute(10_000);
    expect((await ask({ 'x-api-key': perMinute.key })).status).toBe(200);
    await waitUntil(
      async () =>
        total(await scrape(quotaMetrics), 'gateway_quota_redis_decision_seconds_count', { script: 'release' }),
      { what: 'quota to charge the spending requests' },
      (released) => released >= releases + 3,
    );
    const held = await openSlowStream(concurrency.key);
    expect(held.status).toBe(200);

    const before = await scrape(ingressMetrics);
    expect((await ask({ 'x-api-key': perMinute.key })).status).toBe(429);
    expect((await ask({ 'x-api-key': concurrency.key })).status).toBe(429);
    expect((await ask({ 'x-api-key': allowance.key })).status).toBe(429);
    expect((await ask({ 'x-api-key': ceiling.key })).status).toBe(429);
    expect((await ask({ 'x-api-key': perMinute.key }, { model: 'claude-opus-5' })).status).toBe(422);
    held.abort();
    await expectMoved(ingressMetrics, before, [
      ['gateway_limit_refusals_total', { kind: 'per_minute' }, 1],
      ['gateway_limit_refusals_total', { kind: 'concurrency' }, 1],
      ['gateway_limit_refusals_total', { kind: 'quota_exceeded' }, 1],
      ['gateway_limit_refusals_total', { kind: 'hard_ceiling' }, 1],
      ['gateway_residency_refusals_total', { tier: 'eu' }, 1],
      ['gateway_http_requests_total', requests('429', 'rate_limit_error'), 2],
      ['gateway_http_requests_total', requests('429', 'quota_exceeded'), 2],
      ['gateway_http_requests_total', requests('422', 'residency_unavailable'), 1],
      ['gateway_http_requests_total', requests('200', 'client_closed'), 1],
    ]);
  });

  it('shows a request in flight while it runs, its body held by ingress and the router, and a client that left as client_closed', async () => {
    const { key } = await keyOf(await account());
    const routerMetrics = h.metricsUrls.router!;
    const before = await scrape(ingressMetrics);
    const routerBefore = await scrape(routerMetrics);
    const stream = await openSlowStream(key);
    expect(stream.status).toBe(200);
    const inFlight = await scrape(ingressMetrics);
    expect(total(inFlight, 'gateway_http_requests_in_flight', { route: 'messages' })).toBe(
      total(before, 'gateway_http_requests_in_flight', { route: 'messages' }) + 1,
    );
    const held = (samples: Sample[]) => total(samples, 'gateway_request_body_bytes');
    expect(held(inFlight)).toBeGreaterThan(held(before));
    expect(held(await scrape(routerMetrics))).toBeGreaterThan(held(routerBefore));
    stream.abort();
    await expectMoved(ingressMetrics, before, [
      ['gateway_http_requests_in_flight', { route: 'messages' }, 0],
      ['gateway_http_requests_total', requests('200', 'client_closed'), 1],
      ['gateway_http_requests_total', requests('200', 'none'), 0],
      ['gateway_usage_events_total', { stage: 'durable' }, 1],
      ['gateway_request_body_bytes', {}, 0],
    ]);
    await expectMoved(routerMetrics, routerBefore, [['gateway_request_body_bytes', {}, 0]]);
  });

  it('puts no key, account or request id in any label of any service', async () => {
    for (const [service, url] of Object.entries(h.metricsUrls)) {
      const labelValues = (await scrape(url)).flatMap((sample) => Object.values(sample.labels));
      const leaked = labelValues.filter(
        (value) => ids.has(value) || /^(req|acct|key)_/.test(value) || /^gw_(live|test)_/.test(value),
      );
      expect({ service, leaked }).toEqual({ service, leaked: [] });
    }
  });
});
