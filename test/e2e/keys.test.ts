import Anthropic from '@anthropic-ai/sdk';
import { harness } from './harness';
import { admin, counterTotal, rawRequest } from './http';
import { waitUntil } from '@gw/testing';

const h = harness();
const model = 'claude-sonnet-5';
const body = (content = 'hello', stream = false) =>
  JSON.stringify({ model, max_tokens: 32, stream, messages: [{ role: 'user', content }] });

interface KeyResource {
  id: string;
  key: string;
  status: string;
}

async function createKey(overrides: Record<string, unknown> = {}): Promise<KeyResource> {
  const created = await admin<KeyResource>(h, 'POST', '/keys', {
    account_id: h.accountId,
    name: 'e2e',
    environment: 'test',
    residency: 'eu',
    privacy_mode: 'off',
    ...overrides,
  });
  expect(created.status).toBe(201);
  return created.body;
}

const messages = (headers: Record<string, string>, localAddress?: string) =>
  rawRequest(`${h.baseUrl}/v1/messages`, { headers, body: body(), localAddress });

/**
 * Starts a slow streamed completion and resolves with the instant its `error` event arrives, and
 * the error it carried.
 */
async function streamUntilError(key: string, firstDelta: () => void): Promise<{ at: number; error: unknown }> {
  const response = await fetch(`${h.baseUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: body('gw-test:slow', true),
  });
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let sawDelta = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`stream ended without an error event: ${text.slice(-300)}`);
    text += decoder.decode(value, { stream: true });
    if (!sawDelta && text.includes('event: content_block_delta')) {
      sawDelta = true;
      firstDelta();
    }
    const match = /event: error\ndata: (.*)\n\n/.exec(text);
    if (match) return { at: Date.now(), error: JSON.parse(match[1]!) };
  }
}

describe('API keys', () => {
  it('refuses missing, malformed, unknown, revoked and expired keys with the same 401 body', async () => {
    const revoked = await createKey();
    await admin(h, 'POST', `/keys/${revoked.id}/revoke`);
    const expiresAt = Date.now() + 300;
    const expired = await createKey({ expires_at: new Date(expiresAt).toISOString() });
    await waitUntil(() => Date.now() > expiresAt, { what: 'the key to expire' });
    const cases: Record<string, string>[] = [
      {},
      { 'x-api-key': 'not-a-key' },
      { authorization: 'Bearer gw_live_' + 'A'.repeat(32) },
      { 'x-api-key': revoked.key },
      { 'x-api-key': expired.key },
    ];
    for (const headers of cases) {
      const response = await messages(headers);
      expect(response.status).toBe(401);
      expect(response.headers['x-should-retry']).toBe('false');
      const envelope = JSON.parse(response.body);
      expect(envelope).toEqual({
        type: 'error',
        error: {
          type: 'authentication_error',
          message: expect.stringMatching(/Authorization: Bearer.*x-api-key/s),
        },
        request_id: response.headers['x-request-id'],
      });
    }
  });

  it('uses Authorization: Bearer when both headers are sent', async () => {
    const key = await createKey();
    expect((await messages({ authorization: `Bearer ${key.key}`, 'x-api-key': 'wrong' })).status).toBe(200);
    expect((await messages({ authorization: 'Bearer wrong', 'x-api-key': key.key })).status).toBe(401);
  });

  describe('source addresses', () => {
    let key: KeyResource;
    beforeAll(async () => {
      key = await createKey({ allowed_ips: ['198.51.100.0/24', '2001:db8::/32'] });
    });
    const viaProxy = (forwardedFor: string) =>
      messages({ 'x-api-key': key.key, 'x-forwarded-for': forwardedFor }, '127.0.0.2');

    it.each(['198.51.100.7', '::ffff:198.51.100.8', '2001:db8::9'])('admits %s inside the list', async (address) => {
      expect((await viaProxy(address)).status).toBe(200);
    });

    it.each(['203.0.113.5', '::ffff:203.0.113.5', '2001:db9::1'])(
      'refuses %s outside the list with permission_error',
      async (address) => {
        const response = await viaProxy(address);
        expect(response.status).toBe(403);
        expect(JSON.parse(response.body).error.type).toBe('permission_error');
      },
    );

    it('ignores X-Forwarded-For from a peer that is not a trusted proxy', async () => {
      const spoofed = await messages({ 'x-api-key': key.key, 'x-forwarded-for': '198.51.100.7' }, '127.0.0.1');
      expect(spoofed.status).toBe(403);
    });

    it('gives the SDK PermissionDeniedError', async () => {
      const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: key.key, maxRetries: 0 });
      await expect(
        sdk.messages.create({ model, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }),
      ).rejects.toBeInstanceOf(Anthropic.PermissionDeniedError);
    });
  });

  it('never lets a refused request reach policy, quota or router', async () => {
    const services = ['policy', 'quota', 'router'];
    const before = await Promise.all(
      services.map((service) => counterTotal(h.metricsUrls[service]!, 'gateway_grpc_server_handled_total')),
    );
    const fenced = await createKey({ allowed_ips: ['198.51.100.0/24'] });
    const refusals = [
      await messages({}),
      await messages({ 'x-api-key': 'gw_test_' + 'B'.repeat(32) }),
      await messages({ 'x-api-key': fenced.key }),
    ];
    expect(refusals.map((response) => response.status)).toEqual([401, 401, 403]);
    const after = await Promise.all(
      services.map((service) => counterTotal(h.metricsUrls[service]!, 'gateway_grpc_server_handled_total')),
    );
    expect(after).toEqual(before);
    // The counters are live: earlier requests reached quota and router (policy only sees keys whose
    // privacy mode needs the text; the others are decided in ingress from its catalogue).
    expect(before.slice(1).every((count) => count > 0)).toBe(true);
  });

  it('keeps both keys working during a rotation, and only the new one after revoking the old', async () => {
    const old = await createKey();
    const replacement = await createKey();
    expect((await messages({ 'x-api-key': old.key })).status).toBe(200);
    expect((await messages({ 'x-api-key': replacement.key })).status).toBe(200);
    const revoked = await admin<KeyResource>(h, 'POST', `/keys/${old.id}/revoke`);
    expect(revoked.body.status).toBe('revoked');
    expect((await messages({ 'x-api-key': old.key })).status).toBe(401);
    expect((await messages({ 'x-api-key': replacement.key })).status).toBe(200);
    // Revoking again succeeds and changes nothing of the revocation (last use is written in batches, apart).
    const again = await admin<KeyResource & { revoked_at: string }>(h, 'POST', `/keys/${old.id}/revoke`);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(
      expect.objectContaining({ status: 'revoked', revoked_at: (revoked.body as { revoked_at?: string }).revoked_at }),
    );
  });

  it('ends a running stream with an authentication_error event within 200 ms of the revocation', async () => {
    const key = await createKey();
    let revocation: Promise<number> | undefined;
    const { at, error } = await streamUntilError(key.key, () => {
      revocation = admin(h, 'POST', `/keys/${key.id}/revoke`).then(() => Date.now());
    });
    const revokedAt = await revocation!;
    expect(error).toEqual(
      expect.objectContaining({ type: 'error', error: expect.objectContaining({ type: 'authentication_error' }) }),
    );
    expect(revokedAt).toBeGreaterThan(0);
    expect(at - revokedAt).toBeLessThan(200);
  });

  it('ends a running stream at expires_at', async () => {
    const expiresAt = Date.now() + 2_000;
    const key = await createKey({ expires_at: new Date(expiresAt).toISOString() });
    const { at, error } = await streamUntilError(key.key, () => undefined);
    expect(error).toEqual(
      expect.objectContaining({ error: expect.objectContaining({ type: 'authentication_error' }) }),
    );
    expect(at).toBeGreaterThanOrEqual(expiresAt);
    expect(at - expiresAt).toBeLessThan(200);
  });
});
