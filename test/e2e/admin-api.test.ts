import { harness } from './harness';
import { admin } from './http';

const h = harness();

interface Account {
  id: string;
  status: string;
  limits: Record<string, unknown>;
}

async function asAdminKey<T>(key: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${h.adminUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as T };
}

describe('admin API', () => {
  let own: Account;
  let other: Account;
  let adminKey: string;

  beforeAll(async () => {
    own = (await admin<Account>(h, 'POST', '/accounts', { name: 'Own Ltd', plan: 'starter' })).body;
    other = (await admin<Account>(h, 'POST', '/accounts', { name: 'Other Ltd', plan: 'pro' })).body;
    const created = await admin<{ key: string; account_id: string }>(h, 'POST', `/accounts/${own.id}/admin-keys`, {
      name: 'ops',
    });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^gw_admin_[A-Za-z0-9]{32}$/);
    adminKey = created.body.key;
  });

  it('refuses a missing or wrong credential with the envelope', async () => {
    const response = await fetch(`${h.adminUrl}/admin/v1/accounts`, { headers: { authorization: 'Bearer nope' } });
    expect(response.status).toBe(401);
    const body = (await response.json()) as { type: string; error: { type: string }; request_id: string };
    expect(body).toEqual(
      expect.objectContaining({ type: 'error', error: expect.objectContaining({ type: 'authentication_error' }) }),
    );
    expect(body.request_id).toBe(response.headers.get('x-request-id'));
  });

  it('lets an account admin key see and change only its own account', async () => {
    const listed = await asAdminKey<{ data: Account[] }>(adminKey, 'GET', '/accounts');
    expect(listed.body.data.map((account) => account.id)).toEqual([own.id]);
    expect((await asAdminKey(adminKey, 'GET', `/accounts/${other.id}`)).status).toBe(404);
    expect((await asAdminKey(adminKey, 'GET', `/keys?account_id=${other.id}`)).status).toBe(404);
    const created = await asAdminKey<{ id: string; key: string }>(adminKey, 'POST', '/keys', {
      account_id: own.id,
      name: 'ci',
      environment: 'test',
      residency: 'eu',
      privacy_mode: 'off',
    });
    expect(created.status).toBe(201);
    const foreign = await admin<{ id: string }>(h, 'POST', '/keys', {
      account_id: other.id,
      name: 'theirs',
      environment: 'test',
      residency: 'uk',
      privacy_mode: 'off',
    });
    expect((await asAdminKey(adminKey, 'POST', `/keys/${foreign.body.id}/revoke`)).status).toBe(404);
    expect((await asAdminKey(adminKey, 'POST', `/keys/${created.body.id}/revoke`)).status).toBe(200);
  });

  it('keeps operator actions for the operator', async () => {
    expect((await asAdminKey(adminKey, 'POST', '/accounts', { name: 'x', plan: 'pro' })).status).toBe(403);
    expect((await asAdminKey(adminKey, 'POST', `/accounts/${own.id}/suspend`)).status).toBe(403);
  });

  it('suspends and resumes an account, whose keys get 403 meanwhile', async () => {
    const key = await admin<{ key: string }>(h, 'POST', '/keys', {
      account_id: other.id,
      name: 'suspend-me',
      environment: 'test',
      residency: 'eu',
      privacy_mode: 'off',
    });
    const call = () =>
      fetch(`${h.baseUrl}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': key.body.key, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-sonnet-5', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }),
      });
    expect((await call()).status).toBe(200);
    expect((await admin<Account>(h, 'POST', `/accounts/${other.id}/suspend`)).body.status).toBe('suspended');
    const refused = await call();
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/suspended/);
    expect((await admin<Account>(h, 'POST', `/accounts/${other.id}/resume`)).body.status).toBe('active');
    expect((await call()).status).toBe(200);
  });

  it('validates bodies naming the field', async () => {
    const response = await admin<{ error: { type: string; message: string } }>(h, 'POST', '/keys', {
      account_id: own.id,
      name: 'bad',
      environment: 'prod',
      residency: 'eu',
      privacy_mode: 'off',
    });
    expect(response.status).toBe(400);
    expect(response.body.error.message).toMatch(/^environment: /);
    const residency = await admin<{ error: { message: string } }>(h, 'POST', '/keys', {
      account_id: own.id,
      name: 'uk on starter',
      environment: 'live',
      residency: 'uk',
      privacy_mode: 'off',
    });
    expect(residency.status).toBe(400);
    expect(residency.body.error.message).toMatch(/residency/);
  });

  it('sets and clears limit overrides', async () => {
    const set = await admin<Account>(h, 'PATCH', `/accounts/${own.id}/limits`, {
      requests_per_minute: 7,
      overage: true,
    });
    expect(set.body.limits).toEqual({
      requests_per_minute: 7,
      concurrency: null,
      monthly_tokens: null,
      overage: true,
      hard_ceiling_tokens: null,
    });
    const cleared = await admin<Account>(h, 'PATCH', `/accounts/${own.id}/limits`, { requests_per_minute: null });
    expect(cleared.body.limits.requests_per_minute).toBeNull();
    expect((await admin(h, 'PATCH', `/accounts/${own.id}/limits`, {})).status).toBe(400);
  });

  it('rotates a key into a new one with the same settings, the old one working until revoked', async () => {
    const old = await admin<{ id: string; key: string }>(h, 'POST', '/keys', {
      account_id: own.id,
      name: 'rotate-me',
      environment: 'test',
      residency: 'eu',
      privacy_mode: 'redact',
      allowed_models: ['claude-sonnet-5'],
      allowed_ips: ['127.0.0.0/8'],
    });
    const rotated = await asAdminKey<Record<string, unknown>>(adminKey, 'POST', `/keys/${old.body.id}/rotate`);
    expect(rotated.status).toBe(201);
    expect(rotated.body).toMatchObject({
      account_id: own.id,
      name: 'rotate-me',
      environment: 'test',
      residency: 'eu',
      privacy_mode: 'redact',
      allowed_models: ['claude-sonnet-5'],
      allowed_ips: ['127.0.0.0/8'],
      status: 'active',
      replaces: old.body.id,
      key: expect.stringMatching(/^gw_test_/),
    });
    expect(rotated.body.id).not.toBe(old.body.id);
    expect((await admin<{ status: string }>(h, 'GET', `/keys/${old.body.id}`)).body.status).toBe('active');
    await admin(h, 'POST', `/keys/${old.body.id}/revoke`);
    const again = await admin<{ error: { type: string } }>(h, 'POST', `/keys/${old.body.id}/rotate`);
    expect(again.status).toBe(400);
    expect(again.body.error.type).toBe('invalid_request_error');
  });

  it("reports an account's usage this month to its admin key and the operator only", async () => {
    const usage = await asAdminKey<{ environment: string; tokens: Record<string, unknown>; daily: unknown[] }>(
      adminKey,
      'GET',
      `/accounts/${own.id}/usage`,
    );
    expect(usage.status).toBe(200);
    expect(usage.body.environment).toBe('live');
    expect(usage.body.tokens).toEqual(
      expect.objectContaining({ allowance: 1_000_000, used: 0, remaining: 1_000_000, overage: 0 }),
    );
    expect(usage.body.daily).toEqual([]);
    expect((await asAdminKey(adminKey, 'GET', `/accounts/${other.id}/usage`)).status).toBe(404);
    expect((await admin(h, 'GET', `/accounts/${other.id}/usage?environment=test`)).status).toBe(200);
    expect((await admin(h, 'GET', `/accounts/${own.id}/usage?environment=prod`)).status).toBe(400);
  });
});
