import type { Request } from 'express';
import { adminApi } from '@gw/admin-api';
import type { AdminRoute } from '@gw/admin-api';
import { err, gatewayError, ok } from '@gw/errors';
import { authv1, commonv1, create } from '@gw/proto';
import type { Logger } from '@gw/telemetry';
import type { Clients } from '../src/clients';
import { answerFault } from '../src/admin/answer-check';
import { servedRoutes } from '../src/admin/endpoints';
import { decodeInput } from '../src/admin/input';
import type { Principal } from '../src/admin/principal';
import type { RouteContext, ServedRoute } from '../src/admin/route-kit';

const operator: Principal = { kind: 'operator' };
const adminOf = (accountId: string): Principal => ({
  kind: 'account',
  accountId,
  adminKeyId: 'adk_1',
  accountSuspended: false,
});

const apiKey = (fields: { id?: string; accountId?: string; replacesKeyId?: string } = {}) =>
  create(authv1.ApiKeySchema, {
    id: 'key_old',
    accountId: 'acct_1',
    name: 'ci',
    environment: commonv1.Environment.LIVE,
    displayPrefix: 'gw_live_a1B2',
    residency: commonv1.Residency.EU,
    privacyMode: commonv1.PrivacyMode.OFF,
    createdAtUnixMs: 1_764_000_000_000n,
    ...fields,
  });

/** Clients whose methods answer what a test gives, and record their calls. */
function fakeClients(answers: Record<string, (request: unknown) => unknown>) {
  const calls: { method: string; request: unknown }[] = [];
  const service = new Proxy(
    {},
    {
      get: (_target, method: string) => async (request: unknown) => {
        calls.push({ method, request });
        const answer = answers[method];
        if (!answer) throw new Error(`unexpected call ${method}`);
        return answer(request);
      },
    },
  );
  const clients = { auth: service, adminAccess: service, webhooks: service, metering: service, quota: service };
  return { clients: clients as unknown as Clients, calls };
}

const served = (name: keyof typeof adminApi): ServedRoute => {
  const found = servedRoutes.find((candidate) => candidate.route.name === name);
  if (!found) throw new Error(`no handler for ${name}`);
  return found;
};

const context = (principal: Principal, clients: Clients): RouteContext => ({ principal, clients, plans: () => [] });

/** What express would hand the route: its path parameters, query and parsed body. */
const request = (parts: { params?: object; query?: object; body?: unknown }) =>
  ({ params: parts.params ?? {}, query: parts.query ?? {}, body: parts.body }) as unknown as Request;

async function call(name: keyof typeof adminApi, principal: Principal, clients: Clients, parts: object = {}) {
  const { route, handle } = served(name);
  const input = decodeInput(route, request(parts));
  if (!input.ok) return input;
  return handle(input.value, context(principal, clients));
}

describe('admin routes', () => {
  it('serves each declared route once', () => {
    expect(servedRoutes.map((entry) => entry.route.name).sort()).toEqual(Object.keys(adminApi).sort());
    expect(new Set(servedRoutes.map((entry) => entry.route)).size).toBe(servedRoutes.length);
  });

  it('rotates a key in one auth call, answering the new key, its value and the key it replaces', async () => {
    const { clients, calls } = fakeClients({
      getKey: () => ok({ apiKey: apiKey() }),
      rotateKey: () =>
        ok({ apiKey: apiKey({ id: 'key_new', replacesKeyId: 'key_old' }), key: 'gw_live_x', replaced: apiKey() }),
    });
    const answered = await call('rotateKey', adminOf('acct_1'), clients, { params: { id: 'key_old' } });
    expect(calls.map((entry) => entry.method)).toEqual(['getKey', 'rotateKey']);
    expect(calls[1]!.request).toEqual({ keyId: 'key_old', accountId: 'acct_1' });
    if (!answered.ok || answered.value.kind !== 'json') throw new Error('expected an answer');
    expect(answered.value.body).toMatchObject({ id: 'key_new', key: 'gw_live_x', replaces: 'key_old' });
    expect(adminApi.rotateKey.response.safeParse(answered.value.body).success).toBe(true);
    expect(answered.value.audit).toMatchObject({
      action: 'key.rotate',
      before: expect.objectContaining({ id: 'key_old' }),
      after: expect.objectContaining({ id: 'key_new', replaces_key_id: 'key_old' }),
    });
  });

  it("answers 404 for another account's key without asking auth to rotate it", async () => {
    const { clients, calls } = fakeClients({ getKey: () => ok({ apiKey: apiKey({ accountId: 'acct_2' }) }) });
    const answered = await call('rotateKey', adminOf('acct_1'), clients, { params: { id: 'key_old' } });
    expect(answered).toEqual({ ok: false, error: expect.objectContaining({ type: 'not_found_error' }) });
    expect(calls.map((entry) => entry.method)).toEqual(['getKey']);
  });

  it("passes auth's refusal of a revoked key on unchanged", async () => {
    const refusal = gatewayError('invalid_request_error', 'This key is revoked; create a new key instead.');
    const { clients } = fakeClients({ getKey: () => ok({ apiKey: apiKey() }), rotateKey: () => err(refusal) });
    expect(await call('rotateKey', operator, clients, { params: { id: 'key_old' } })).toEqual(err(refusal));
  });

  it("lists an account's keys with the query's page and filters", async () => {
    const { clients, calls } = fakeClients({ searchKeys: () => ok({ keys: [apiKey()], nextAfter: 'key_old' }) });
    const answered = await call('listKeys', adminOf('acct_1'), clients, {
      query: { account_id: 'acct_1', limit: '2', q: 'ci', environment: 'live' },
    });
    expect(calls[0]!.request).toEqual({
      accountId: 'acct_1',
      page: { limit: 2, after: '' },
      query: 'ci',
      status: '',
      environment: commonv1.Environment.LIVE,
    });
    expect(answered.ok && answered.value.kind === 'json' && answered.value.body).toMatchObject({
      data: [expect.objectContaining({ id: 'key_old' })],
      next_after: 'key_old',
    });
  });

  it.each([
    [{ account_id: 'acct_1', limit: '201' }, 'limit: expected a whole number from 1 to 200.'],
    [{ account_id: 'acct_1', limit: ['1', '2'] }, 'limit: expected one value.'],
    [{ account_id: 'acct_1', status: 'lost' }, 'status: "lost" is not one of active, revoked, expired.'],
    [{ account_id: 'acct_1', environment: 'prod' }, 'environment: expected "live" or "test".'],
    [{}, 'account_id: expected the account id as a query parameter.'],
  ])('refuses the query %p naming the parameter, before any call', async (query, message) => {
    const { clients, calls } = fakeClients({});
    expect(await call('listKeys', operator, clients, { query })).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'invalid_request_error', message }),
    });
    expect(calls).toEqual([]);
  });

  it('refuses a body against its declaration, naming the field', async () => {
    const { clients } = fakeClients({});
    expect(await call('createAccount', operator, clients, { body: { name: 'Acme', plan: 'pro', x: 1 } })).toEqual({
      ok: false,
      error: expect.objectContaining({ message: 'unknown field "x".' }),
    });
  });
});

describe('the answer check', () => {
  const lines: { fields: Record<string, unknown>; message: string }[] = [];
  const logger = {
    error: (fields: Record<string, unknown>, message: string) => lines.push({ fields, message }),
  } as unknown as Logger;
  const route: AdminRoute = adminApi.getAccount;
  const account = {
    id: 'acct_1',
    name: 'Acme',
    plan: 'pro',
    status: 'active',
    suspended_at: null,
    created_at: '2026-11-28T10:00:00.000Z',
    limits: {
      requests_per_minute: null,
      concurrency: null,
      monthly_tokens: null,
      overage: null,
      hard_ceiling_tokens: null,
    },
  };

  it('lets a matching answer through', () => {
    expect(answerFault(route, account, logger)).toBeUndefined();
  });

  it.each([
    ['a field more', { ...account, secret: 'x' }],
    ['a field less', { ...account, plan: undefined }],
    ['a field of another type', { ...account, status: 'gone' }],
    ['a nested field of another type', { ...account, limits: { ...account.limits, concurrency: '5' } }],
  ])('turns an answer with %s into a logged api_error', (_what, body) => {
    lines.length = 0;
    expect(answerFault(route, body, logger)).toEqual(expect.objectContaining({ type: 'api_error' }));
    expect(lines).toEqual([
      {
        fields: expect.objectContaining({ route: 'getAccount' }),
        message: 'admin answer does not match its declared schema',
      },
    ]);
  });
});
