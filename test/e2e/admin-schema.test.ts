import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { adminApi, createAdminClient } from '@gw/admin-api';
import type { AdminApi, AdminRouteName, CallInput } from '@gw/admin-api';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { startWebhookReceiver } from './webhook-receiver';

const h = harness();

/**
 * Every route of the admin API called for real against the stack, through the one typed client, each
 * answer checked against the route's declared schema: an answer with a field more, less or of another
 * type fails here (and the server itself refuses to send it).
 */
describe('admin API answers match their declared schemas', () => {
  const client = createAdminClient({ baseUrl: h.adminUrl, token: h.adminToken, timeoutMs: 10_000 });
  const receiver = startWebhookReceiver(h);
  const called = new Set<string>();

  async function answer<K extends AdminRouteName>(name: K, input: CallInput<AdminApi[K]>) {
    const result = await client.call(name, input);
    if (!result.ok) throw new Error(`${name}: ${JSON.stringify(result.failure)}`);
    const checked = adminApi[name].response.safeParse(result.value);
    expect({ route: name, issues: checked.error?.issues ?? [] }).toEqual({ route: name, issues: [] });
    called.add(name);
    return result.value;
  }

  beforeAll(() => receiver.listen());
  afterAll(() => receiver.close());

  it('accounts, limits, usage and admin keys', async () => {
    const account = await answer('createAccount', { body: { name: 'Schema Ltd', plan: 'starter' } });
    const id = { params: { id: account.id } };
    await answer('listAccounts', { query: { limit: '5' } });
    await answer('getAccount', id);
    await answer('setAccountLimits', { ...id, body: { requests_per_minute: 100, overage: true } });
    await answer('getAccountLimits', id);
    await answer('getAccountUsage', { ...id, query: { environment: 'live' } });
    await answer('getKeyUsage', id);
    await answer('getKeyDailyUsage', id);
    const adminKey = await answer('createAdminKey', { ...id, body: { name: 'ops' } });
    await answer('listAdminKeys', id);
    await answer('revokeAdminKey', { params: { id: adminKey.id } });
    await answer('suspendAccount', id);
    await answer('resumeAccount', id);
  });

  it('keys, their rotation and the audit log', async () => {
    const key = await answer('createKey', {
      body: { account_id: h.accountId, name: 'schema', environment: 'test', residency: 'eu', privacy_mode: 'off' },
    });
    const id = { params: { id: key.id } };
    await answer('listKeys', { query: { account_id: h.accountId, limit: '5' } });
    await answer('getKey', id);
    await answer('updateKey', { ...id, body: { name: 'schema-renamed', allowed_ips: ['127.0.0.0/8'] } });
    const rotated = await answer('rotateKey', id);
    expect(rotated.replaces).toBe(key.id);
    await answer('revokeKey', id);
    await answer('revokeKey', { params: { id: rotated.id } });
    const audit = await answer('listAudit', { query: { account_id: h.accountId, action: 'key.' } });
    expect(audit.data.map((entry) => entry.action)).toEqual(expect.arrayContaining(['key.rotate', 'key.update']));
    await answer('verifyAudit', {});
  });

  it('webhook endpoints and their deliveries', async () => {
    const account = await answer('createAccount', { body: { name: 'Hooks Ltd', plan: 'starter' } });
    const endpoint = await answer('createWebhookEndpoint', {
      params: { id: account.id },
      body: { url: receiver.url, event_types: ['key.revoked', 'key.rotated'] },
    });
    const id = { params: { id: endpoint.id } };
    await answer('listWebhookEndpoints', { params: { id: account.id } });
    await answer('getWebhookEndpoint', id);
    await answer('rotateWebhookSecret', id);
    const key = await answer('createKey', {
      body: { account_id: account.id, name: 'hooked', environment: 'live', residency: 'eu', privacy_mode: 'off' },
    });
    await answer('rotateKey', { params: { id: key.id } });
    await answer('revokeKey', { params: { id: key.id } });
    const delivered = await waitUntil(
      async () => {
        const listed = await answer('listDeliveries', id);
        return listed.data.length === 2 && listed.data.every((delivery) => delivery.status === 'delivered')
          ? listed.data
          : undefined;
      },
      { what: 'both key events delivered', timeoutMs: 20_000, intervalMs: 200 },
    );
    await answer('resendDelivery', { params: { id: endpoint.id, message_id: delivered?.[0]?.id ?? '' } });
    await answer('deleteWebhookEndpoint', id);
  });

  it('called every route of the table', () => {
    expect([...called].sort()).toEqual(Object.keys(adminApi).sort());
  });

  it('serves the OpenAPI document checked into docs/, without a credential', async () => {
    const response = await fetch(`${h.adminUrl}/admin/v1/openapi.json`);
    expect(response.status).toBe(200);
    const checkedIn: unknown = JSON.parse(readFileSync(join(__dirname, '../../docs/admin-api.openapi.json'), 'utf8'));
    expect(await response.json()).toEqual(checkedIn);
  });
});
