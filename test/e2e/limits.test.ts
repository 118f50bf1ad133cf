import Anthropic from '@anthropic-ai/sdk';
import Redis from 'ioredis';
import { waitUntil, waitForRoomInMinute } from '@gw/testing';
import { billingPeriodOf } from '@gw/vocabulary';
import { harness } from './harness';
import { admin, rawRequest } from './http';
import type { RawResponse } from './http';
import { startIngressReplica, startQuotaReplica } from './replicas';
import type { Replica } from './replicas';

const h = harness();
const model = 'claude-sonnet-5';
/** The second replica pair: its own ports beside the stack's. */
const second = { quota: { grpc: 21071, metrics: 21072 }, ingress: { http: 21081, admin: 21082, metrics: 21083 } };
const secondBaseUrl = `http://127.0.0.1:${second.ingress.http}`;

interface Created {
  id: string;
  key?: string;
}

async function accountWithKey(
  limits: Record<string, unknown>,
  environment: 'live' | 'test' = 'test',
): Promise<{ accountId: string; key: string }> {
  const account = await admin<Created>(h, 'POST', '/accounts', { name: 'limits', plan: 'pro' });
  expect((await admin(h, 'PATCH', `/accounts/${account.body.id}/limits`, limits)).status).toBe(200);
  const key = await admin<Created>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'limits',
    environment,
    residency: 'eu',
    privacy_mode: 'off',
  });
  return { accountId: account.body.id, key: key.body.key! };
}

const ask = (baseUrl: string, key: string, content = 'hi', stream = false): Promise<RawResponse> =>
  rawRequest(`${baseUrl}/v1/messages`, {
    headers: { 'x-api-key': key },
    body: JSON.stringify({ model, max_tokens: 16, stream, messages: [{ role: 'user', content }] }),
  });

/** A slow stream that is open (its first delta arrived); abort() disconnects the client. */
async function openSlowStream(baseUrl: string, key: string): Promise<{ status: number; abort(): void }> {
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/v1/messages`, {
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

const inflightKey = (accountId: string) => `q:{a:${accountId}:test}:inflight`;

describe('the three limits across replicas', () => {
  const redis = new Redis(h.replica.redisUrl);
  /** Within a second of the clients going away, no slot is held. */
  const slotsFreed = (accountId: string) =>
    waitUntil(
      () => redis.zcard(inflightKey(accountId)),
      { what: 'every slot freed', timeoutMs: 1_000 },
      (held) => held === 0,
    );
  let quota2: Replica;
  let ingress2: Replica;

  beforeAll(async () => {
    quota2 = await startQuotaReplica(h, second.quota, h.databaseUrl, { LEASE_TTL_MS: '2000' });
    ingress2 = await startIngressReplica(h, second.ingress, `127.0.0.1:${second.quota.grpc}`);
  });

  afterAll(async () => {
    await ingress2?.stop();
    await quota2?.stop();
    redis.disconnect();
  });

  it('admits exactly N of a 5×N burst spread over two ingresses and two quotas', async () => {
    const limit = 12;
    const { key } = await accountWithKey({ requests_per_minute: limit, concurrency: 1000 });
    await waitForRoomInMinute(3_000);
    const responses = await Promise.all(
      Array.from({ length: 5 * limit }, (_, index) => ask(index % 2 === 0 ? h.baseUrl : secondBaseUrl, key)),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(limit);
    expect(statuses.filter((status) => status === 429)).toHaveLength(4 * limit);
    const refused = responses.find((response) => response.status === 429)!;
    expect(JSON.parse(refused.body).error.type).toBe('rate_limit_error');
    expect(refused.headers['anthropic-ratelimit-requests-remaining']).toBe('0');
    expect(refused.headers['x-should-retry']).toBe('true');
  });

  it('never has more than C in flight across both replicas, and frees slots when clients go away', async () => {
    const concurrency = 3;
    const { accountId, key } = await accountWithKey({ concurrency, requests_per_minute: 1000 });
    const streams = await Promise.all(
      Array.from({ length: 10 }, (_, index) => openSlowStream(index % 2 === 0 ? h.baseUrl : secondBaseUrl, key)),
    );
    expect(streams.filter((stream) => stream.status === 200)).toHaveLength(concurrency);
    expect(streams.filter((stream) => stream.status === 429)).toHaveLength(10 - concurrency);
    expect(await redis.zcard(inflightKey(accountId))).toBe(concurrency);
    for (const stream of streams) stream.abort();
    await slotsFreed(accountId);
  });

  it('leaks no slot when 1,000 streaming clients disconnect mid-stream', async () => {
    const { accountId, key } = await accountWithKey({ concurrency: 50, requests_per_minute: 5000 });
    for (let batch = 0; batch < 20; batch += 1) {
      const streams = await Promise.all(
        Array.from({ length: 50 }, (_, index) => openSlowStream(index % 2 === 0 ? h.baseUrl : secondBaseUrl, key)),
      );
      expect(streams.every((stream) => stream.status === 200)).toBe(true);
      for (const stream of streams) stream.abort();
      // Each batch needs the previous one's slots back: a leak shows up as a 429 in the next batch, or below.
      await waitUntil(
        () => redis.zcard(inflightKey(accountId)),
        { what: 'the batch freed', timeoutMs: 1_000 },
        (held) => held === 0,
      ).catch(() => undefined);
    }
    await slotsFreed(accountId);
  }, 180_000);

  it('frees the leases of a quota process killed with SIGKILL within the lease timeout', async () => {
    const { accountId, key } = await accountWithKey({ concurrency: 4, requests_per_minute: 1000 });
    const streams = await Promise.all(Array.from({ length: 4 }, () => openSlowStream(secondBaseUrl, key)));
    expect(streams.every((stream) => stream.status === 200)).toBe(true);
    await quota2.stop('SIGKILL');
    const killedAt = Date.now();
    // Leases are renewed through the dead process no more; they lapse after LEASE_TTL_MS (2 s).
    await waitUntil(
      () => redis.zcount(inflightKey(accountId), Date.now(), '+inf'),
      { what: 'no live lease', timeoutMs: 5_000, intervalMs: 100 },
      (live) => live === 0,
    );
    expect(Date.now() - killedAt).toBeLessThan(2_000 + 1_000);
    const admitted = await Promise.all(Array.from({ length: 4 }, () => openSlowStream(h.baseUrl, key)));
    expect(admitted.every((stream) => stream.status === 200)).toBe(true);
    for (const stream of [...streams, ...admitted]) stream.abort();
    quota2 = await startQuotaReplica(h, second.quota, h.databaseUrl, { LEASE_TTL_MS: '2000' });
  });
});

describe('limits as the official SDK sees them', () => {
  it('raises RateLimitError with retry-after equal to the seconds until the next minute', async () => {
    const { key } = await accountWithKey({ requests_per_minute: 2, concurrency: 10 });
    await waitForRoomInMinute(3_000);
    const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: key, maxRetries: 0 });
    const params = { model, max_tokens: 8, messages: [{ role: 'user' as const, content: 'x' }] };
    await sdk.messages.create(params);
    await sdk.messages.create(params);
    const error = await sdk.messages.create(params).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    const headers = (error as InstanceType<typeof Anthropic.RateLimitError>).headers!;
    const expected = Math.ceil((60_000 - (Date.now() % 60_000)) / 1000);
    expect(Math.abs(Number(headers.get('retry-after')) - expected)).toBeLessThanOrEqual(1);
    expect(Number(headers.get('retry-after-ms'))).toBeGreaterThan(0);
    expect(headers.get('anthropic-ratelimit-requests-limit')).toBe('2');
  });

  it('tries quota_exceeded exactly once, though the SDK retries other 429s', async () => {
    const { accountId, key } = await accountWithKey(
      { monthly_tokens: 1, hard_ceiling_tokens: 1, overage: false },
      'live',
    );
    let attempts = 0;
    const counting: typeof fetch = async (input, init) => {
      attempts += 1;
      return fetch(input, init);
    };
    const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: key, fetch: counting, maxRetries: 2 });
    const params = { model, max_tokens: 8, messages: [{ role: 'user' as const, content: 'spend my tokens' }] };
    await sdk.messages.create(params);
    // The first request's tokens are charged when it ends.
    const tokensKey = `q:{a:${accountId}:live}:tokens:${billingPeriodOf(new Date()).month}`;
    const counters = new Redis(h.replica.redisUrl);
    await waitUntil(async () => Number(await counters.get(tokensKey)) > 0, {
      what: 'the first request charged',
    }).finally(() => counters.disconnect());
    attempts = 0;
    const error = await sdk.messages.create(params).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    const refused = error as InstanceType<typeof Anthropic.RateLimitError>;
    expect(refused.type).toBe('quota_exceeded');
    expect(refused.headers?.get('x-should-retry')).toBe('false');
    expect(refused.headers?.get('retry-after')).toBeNull();
    expect(attempts).toBe(1);
  });

  it('sends the rate-limit headers on success and on errors of authenticated requests', async () => {
    const { key } = await accountWithKey({ requests_per_minute: 100 });
    const success = await ask(h.baseUrl, key);
    const notFound = await rawRequest(`${h.baseUrl}/v1/messages`, {
      headers: { 'x-api-key': key },
      body: JSON.stringify({ model: 'nope', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }),
    });
    const invalid = await rawRequest(`${h.baseUrl}/v1/messages`, { headers: { 'x-api-key': key }, body: '{}' });
    const models = await rawRequest(`${h.baseUrl}/v1/models`, { method: 'GET', headers: { 'x-api-key': key } });
    for (const response of [success, notFound, invalid, models]) {
      expect(response.headers['anthropic-ratelimit-requests-limit']).toBe('100');
      expect(response.headers['anthropic-ratelimit-requests-remaining']).toBe('99');
      expect(response.headers['anthropic-ratelimit-requests-reset']).toMatch(
        /^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000\+00:00$/,
      );
    }
  });

  it('changes no counter for a refused request', async () => {
    const { accountId, key } = await accountWithKey({ requests_per_minute: 3, concurrency: 10 });
    await waitForRoomInMinute(3_000);
    const remaining = async () =>
      (await rawRequest(`${h.baseUrl}/v1/models`, { method: 'GET', headers: { 'x-api-key': key } })).headers[
        'anthropic-ratelimit-requests-remaining'
      ];
    expect(await remaining()).toBe('3');
    const body = (modelName: string) =>
      JSON.stringify({ model: modelName, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] });
    const refusals = await Promise.all([
      rawRequest(`${h.baseUrl}/v1/messages`, { headers: { 'x-api-key': `${key.slice(0, -1)}X` }, body: body(model) }),
      rawRequest(`${h.baseUrl}/v1/messages`, { headers: { 'x-api-key': key }, body: body('nope') }),
      rawRequest(`${h.baseUrl}/v1/messages`, { headers: { 'x-api-key': key }, body: body('claude-opus-5') }),
    ]);
    expect(refusals.map((response) => response.status)).toEqual([401, 404, 422]);
    expect(await remaining()).toBe('3');
    for (let index = 0; index < 3; index += 1) expect((await ask(h.baseUrl, key)).status).toBe(200);
    expect((await ask(h.baseUrl, key)).status).toBe(429);
    expect(await remaining()).toBe('0');
    const redis = new Redis(h.replica.redisUrl);
    expect(await redis.zcard(inflightKey(accountId))).toBe(0);
    redis.disconnect();
  });
});
