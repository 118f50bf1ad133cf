import { request } from 'node:http';
import Redis from 'ioredis';
import { waitUntil, waitForRoomInMinute } from '@gw/testing';
import { harness } from './harness';
import { admin, rawRequest } from './http';
import type { RawResponse } from './http';
import {} from './replicas';

const h = harness();
const model = 'claude-sonnet-5';

interface Created {
  id: string;
  key?: string;
}

async function accountWithKey(limits: Record<string, unknown>): Promise<{ accountId: string; key: string }> {
  const account = await admin<Created>(h, 'POST', '/accounts', { name: 'uploads', plan: 'pro' });
  expect((await admin(h, 'PATCH', `/accounts/${account.body.id}/limits`, limits)).status).toBe(200);
  const key = await admin<Created>(h, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'uploads',
    environment: 'test',
    residency: 'eu',
    privacy_mode: 'off',
  });
  return { accountId: account.body.id, key: key.body.key! };
}

const bodyOf = (path: string) =>
  JSON.stringify({
    model,
    ...(path === '/v1/messages' ? { max_tokens: 16 } : {}),
    messages: [{ role: 'user', content: 'an upload that takes its time' }],
  });

/**
 * An upload that sends its headers and the first half of its body, then waits. `answered` says what the
 * gateway did meanwhile (it should not answer); abort() disconnects the client.
 */
function unfinishedUpload(path: string, key: string) {
  const body = bodyOf(path);
  const outgoing = request(`${h.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  });
  let answered: number | undefined;
  outgoing.on('response', (response) => {
    answered = response.statusCode;
    response.resume();
  });
  outgoing.on('error', () => undefined);
  outgoing.write(body.slice(0, body.length / 2));
  return { answered: () => answered, abort: () => outgoing.destroy() };
}

const complete = (path: string, key: string): Promise<RawResponse> =>
  rawRequest(`${h.baseUrl}${path}`, { headers: { 'x-api-key': key }, body: bodyOf(path) });

describe('unfinished uploads count against the concurrency', () => {
  const redis = new Redis(h.replica.redisUrl);
  afterAll(() => redis.disconnect());

  it('holds a slot from the verified key on: two trickling uploads fill a limit of 2, and free it when they go', async () => {
    const { accountId, key } = await accountWithKey({ concurrency: 2, requests_per_minute: 100 });
    const leasesHeld = () => redis.zcard(`q:{a:${accountId}:test}:inflight`);
    await waitForRoomInMinute(10_000);

    const uploads = [unfinishedUpload('/v1/messages', key), unfinishedUpload('/v1/messages/count_tokens', key)];
    await waitUntil(leasesHeld, { what: 'both uploads to hold a slot' }, (held) => held === 2);

    for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
      const refused = await complete(path, key);
      expect(refused.status).toBe(429);
      expect(JSON.parse(refused.body).error).toEqual(
        expect.objectContaining({ type: 'rate_limit_error', message: expect.stringMatching(/concurrent/i) }),
      );
      expect(refused.headers['retry-after']).toBe('1');
      // Neither the uploads nor the refusals took a per-minute slot.
      expect(refused.headers['anthropic-ratelimit-requests-remaining']).toBe('100');
    }
    expect(uploads.map((upload) => upload.answered())).toEqual([undefined, undefined]);

    for (const upload of uploads) upload.abort();
    await waitUntil(leasesHeld, { what: 'the aborted uploads to free their slots' }, (held) => held === 0);

    const admitted = await complete('/v1/messages', key);
    expect(admitted.status).toBe(200);
    expect(admitted.headers['anthropic-ratelimit-requests-remaining']).toBe('99');
    await waitUntil(leasesHeld, { what: 'the admitted request to free its slot' }, (held) => held === 0);
  });

  it('admits an upload that had arrived when its key was verified in one quota call (no reservation)', async () => {
    const { key } = await accountWithKey({ concurrency: 2, requests_per_minute: 100 });
    const quotaCalls = async (method: string) => {
      const text = await (await fetch(h.metricsUrls.quota!)).text();
      return text
        .split('\n')
        .filter(
          (line) => line.startsWith('gateway_grpc_server_handled_total{') && line.includes(`grpc_method="${method}"`),
        )
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    };
    const before = { reserve: await quotaCalls('Reserve'), acquire: await quotaCalls('Acquire') };
    expect((await complete('/v1/messages', key)).status).toBe(200);
    expect(await quotaCalls('Reserve')).toBe(before.reserve);
    expect(await quotaCalls('Acquire')).toBe(before.acquire + 1);
  });
});
