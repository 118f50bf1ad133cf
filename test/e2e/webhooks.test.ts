import Anthropic from '@anthropic-ai/sdk';
import { Client } from 'pg';
import { Webhook } from 'standardwebhooks';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin } from './http';
import { waitForUsageRow } from './usage';
import { startWebhookReceiver } from './webhook-receiver';
import type { ReceivedDelivery } from './webhook-receiver';

const h = harness();
const model = 'claude-sonnet-5';

const verified = (secret: string, delivery: ReceivedDelivery) =>
  new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as {
    type: string;
    timestamp: string;
    data: Record<string, unknown>;
  };

interface Endpoint {
  id: string;
  secret: string;
  url: string;
  event_types: string[];
  thresholds_percent: number[];
}

interface DeliveryLog {
  data: {
    id: string;
    status: string;
    event_type: string;
    attempts: number;
    attempt_log: { status_code: number | null; error: string | null }[];
  }[];
}

async function liveKey(accountId: string) {
  const key = await admin<{ key: string }>(h, 'POST', '/keys', {
    account_id: accountId,
    name: 'webhooks',
    environment: 'live',
    residency: 'eu',
    privacy_mode: 'off',
  });
  expect(key.status).toBe(201);
  return key.body.key;
}

const words = Array.from({ length: 60 }, (_, index) => `word${index}`).join(' ');

describe('budget alerts by webhook', () => {
  const receiver = startWebhookReceiver(h);
  const db = new Client({ connectionString: h.databaseUrl });
  beforeAll(() => Promise.all([receiver.listen(), db.connect()]));
  afterAll(() => Promise.all([receiver.close(), db.end()]));

  it('delivers one signed event when an account crosses 80 %, retried after a 500, never a second for the same crossing', async () => {
    // What one request of this text costs, measured on an account of its own.
    const probe = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'webhook probe', plan: 'pro' });
    const probeSdk = new Anthropic({ baseURL: h.baseUrl, apiKey: await liveKey(probe.body.id), maxRetries: 0 });
    const ask = (content: string) => ({ model, max_tokens: 512, messages: [{ role: 'user' as const, content }] });
    const probed = await probeSdk.messages.create(ask(words));
    const billable = probed.usage.input_tokens + probed.usage.output_tokens;
    // One such request takes the account to about 83 % of its allowance.
    const allowance = Math.ceil(billable * 1.2);

    const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'webhooks', plan: 'pro' });
    const accountId = account.body.id;
    await admin(h, 'PATCH', `/accounts/${accountId}/limits`, { monthly_tokens: allowance, overage: true });
    const created = await admin<Endpoint>(h, 'POST', `/accounts/${accountId}/webhooks`, {
      url: receiver.url,
      event_types: ['usage.threshold_crossed'],
      thresholds_percent: [100, 80],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ url: receiver.url, thresholds_percent: [80, 100] });
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const { id: endpointId, secret } = created.body;

    receiver.answers.push(500);
    const sdk = new Anthropic({ baseURL: h.baseUrl, apiKey: await liveKey(accountId), maxRetries: 0 });
    const crossing = await sdk.messages.create(ask(words));
    expect(crossing.usage.input_tokens + crossing.usage.output_tokens).toBe(billable);

    await waitUntil(
      () => receiver.received.length,
      { what: 'a delivery, then its retry', timeoutMs: 20_000 },
      (count) => count >= 2,
    );
    const [first, retry] = receiver.received;
    expect(first!.answered).toBe(500);
    expect(retry!.answered).toBe(200);
    // The retry is the same message: the same webhook-id, the same body, both signed.
    expect(retry!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(retry!.headers['webhook-id']).toMatch(/^msg_/);
    expect(retry!.body).toBe(first!.body);
    expect(verified(secret, first!)).toEqual(verified(secret, retry!));
    const event = verified(secret, retry!);
    expect(event).toEqual({
      type: 'usage.threshold_crossed',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      data: {
        account_id: accountId,
        environment: 'live',
        period_start: `${new Date().toISOString().slice(0, 7)}-01`,
        threshold_percent: 80,
        allowance_tokens: allowance,
        used_tokens: billable,
      },
    });
    // Counts and ids only: nothing of the prompt or the completion.
    expect(retry!.body).not.toContain('word1');
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(
        retry!.body,
        retry!.headers as Record<string, string>,
      ),
    ).toThrow();

    // A further request that stays between 80 % and 100 % raises nothing: its usage is stored (in the
    // transaction that would have written an event) and the outbox still holds the one message.
    const small = await sdk.messages.create(ask('small')).withResponse();
    await waitForUsageRow(h.databaseUrl, small.response.headers.get('request-id')!);
    const { rows } = await db.query<{ event_type: string; dedupe_key: string }>(
      'SELECT event_type, dedupe_key FROM webhook_messages WHERE endpoint_id = $1',
      [endpointId],
    );
    expect(rows).toEqual([{ event_type: 'usage.threshold_crossed', dedupe_key: expect.stringMatching(/:80$/) }]);

    // The delivery log: one message, two attempts.
    const log = await waitUntil(
      async () => (await admin<DeliveryLog>(h, 'GET', `/webhooks/${endpointId}/deliveries`)).body,
      { what: 'the delivery logged as delivered' },
      (body) => body.data[0]?.status === 'delivered',
    );
    expect(log.data).toHaveLength(1);
    expect(log.data[0]).toMatchObject({
      id: first!.headers['webhook-id'],
      event_type: 'usage.threshold_crossed',
      attempts: 2,
    });
    expect(log.data[0]!.attempt_log.map((attempt) => attempt.status_code)).toEqual([500, 200]);
    expect(receiver.received).toHaveLength(2);

    // Resend: the same message again, with its id; after a secret rotation, signed with both secrets.
    const rotated = await admin<Endpoint>(h, 'POST', `/webhooks/${endpointId}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(secret);
    const resent = await admin<{ id: string; status: string }>(
      h,
      'POST',
      `/webhooks/${endpointId}/deliveries/${log.data[0]!.id}/resend`,
    );
    expect(resent.body).toMatchObject({ id: log.data[0]!.id, status: 'pending' });
    await waitUntil(
      () => receiver.received.length,
      { what: 'the resent delivery' },
      (count) => count >= 3,
    );
    const third = receiver.received[2]!;
    expect(third.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(verified(rotated.body.secret, third)).toEqual(event);
    expect(verified(secret, third)).toEqual(event);
  });

  it('refuses endpoints on private or loopback addresses unless allow-listed, and bad subscriptions, by name', async () => {
    const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'webhook refusals', plan: 'pro' });
    const register = (body: Record<string, unknown>) =>
      admin<{ error: { type: string; message: string } }>(h, 'POST', `/accounts/${account.body.id}/webhooks`, {
        event_types: ['usage.threshold_crossed'],
        ...body,
      });
    for (const [url, why] of [
      // The allow-list names localhost at the receiver's port only: another port, or the address itself, is refused.
      [`https://localhost:${h.webhookReceiver.port + 1}/x`, /private, loopback or link-local/],
      [`https://127.0.0.1:${h.webhookReceiver.port}/x`, /private, loopback or link-local/],
      ['https://[::1]/x', /private, loopback or link-local/],
      ['https://169.254.169.254/latest/meta-data', /private, loopback or link-local/],
      ['http://localhost/x', /https:\/\/ URL/],
    ] as const) {
      const refused = await register({ url });
      expect(refused.status).toBe(400);
      expect(refused.body.error.message).toMatch(/^url: /);
      expect(refused.body.error.message).toMatch(why);
    }
    const badType = await register({ url: receiver.url, event_types: ['usage.everything'] });
    expect(badType.body.error.message).toMatch(/^event_types\.0: /);
    const badThreshold = await register({ url: receiver.url, thresholds_percent: [0] });
    expect(badThreshold.body.error.message).toMatch(/^thresholds_percent: /);
    const unknownField = await register({ url: receiver.url, secret: 'mine' });
    expect(unknownField.body.error.message).toMatch(/unknown field "secret"/);
    const listed = await admin<{ data: unknown[] }>(h, 'GET', `/accounts/${account.body.id}/webhooks`);
    expect(listed.body.data).toEqual([]);

    // Another account's admin key sees none of it.
    const created = await admin<Endpoint>(h, 'POST', `/accounts/${account.body.id}/webhooks`, {
      url: receiver.url,
      event_types: ['key.revoked'],
    });
    expect(created.status).toBe(201);
    expect(created.body.thresholds_percent).toEqual([]);
    const other = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'other', plan: 'pro' });
    const adminKey = await admin<{ key: string }>(h, 'POST', `/accounts/${other.body.id}/admin-keys`, { name: 'a' });
    for (const path of [`/webhooks/${created.body.id}`, `/webhooks/${created.body.id}/deliveries`]) {
      const hidden = await fetch(`${h.adminUrl}/admin/v1${path}`, {
        headers: { authorization: `Bearer ${adminKey.body.key}` },
      });
      expect(hidden.status).toBe(404);
    }
    const deleted = await admin<{ id: string }>(h, 'DELETE', `/webhooks/${created.body.id}`);
    expect(deleted.status).toBe(200);
    expect((await admin<{ data: unknown[] }>(h, 'GET', `/accounts/${account.body.id}/webhooks`)).body.data).toEqual([]);
  });

  it('delivers key revoked, rotated and expiring events, each once', async () => {
    const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'key events', plan: 'pro' });
    const accountId = account.body.id;
    const endpoint = await admin<Endpoint>(h, 'POST', `/accounts/${accountId}/webhooks`, {
      url: receiver.url,
      event_types: ['key.revoked', 'key.rotated', 'key.expiring'],
      expiring_within_days: 3,
    });
    expect(endpoint.status).toBe(201);
    const newKey = async (expiresInDays?: number) => {
      const created = await admin<{ id: string; expires_at: string | null }>(h, 'POST', '/keys', {
        account_id: accountId,
        name: 'key events',
        environment: 'live',
        residency: 'eu',
        privacy_mode: 'off',
        expires_at:
          expiresInDays === undefined ? null : new Date(Date.now() + expiresInDays * 86_400_000).toISOString(),
      });
      expect(created.status).toBe(201);
      return created.body;
    };
    const expiring = await newKey(2);
    await newKey(10);
    const rotatedOut = await newKey();
    const rotation = await admin<{ id: string; replaces: string }>(h, 'POST', `/keys/${rotatedOut.id}/rotate`);
    expect(rotation.status).toBe(201);
    for (let time = 0; time < 2; time += 1) {
      expect((await admin(h, 'POST', `/keys/${rotatedOut.id}/revoke`)).status).toBe(200);
    }

    // This account's deliveries only (the receiver serves every test), each verified with its secret.
    const events = () =>
      receiver.received
        .filter((delivery) => delivery.body.includes(accountId))
        .map((delivery) => verified(endpoint.body.secret, delivery));
    const received = await waitUntil(
      events,
      { what: 'three key events', timeoutMs: 20_000 },
      (list) => list.length >= 3,
    );
    const byType = Object.fromEntries(received.map((event) => [event.type, event.data]));
    expect(byType).toEqual({
      'key.expiring': { account_id: accountId, key_id: expiring.id, expires_at: expiring.expires_at },
      'key.rotated': { account_id: accountId, key_id: rotatedOut.id, new_key_id: rotation.body.id },
      'key.revoked': { account_id: accountId, key_id: rotatedOut.id, revoked_at: expect.any(String) },
    });
    // Revoked twice, one event; the key expiring in ten days is beyond the endpoint's three.
    const { rows } = await db.query('SELECT event_type FROM webhook_messages WHERE endpoint_id = $1', [
      endpoint.body.id,
    ]);
    expect(rows.map((row: { event_type: string }) => row.event_type).sort()).toEqual([
      'key.expiring',
      'key.revoked',
      'key.rotated',
    ]);
  });
});
