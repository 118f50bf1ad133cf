import { parseGatewayConfig } from '@gw/config';
import { createPool } from '@gw/db';
import type { Pool } from '@gw/db';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase } from '../../../test/support/database';
import type { TestDatabase } from '../../../test/support/database';
import { KeyFormat } from '../src/key-format';
import { VerifiedKeyCache } from '../src/key-cache';
import { KeyService } from '../src/keys';
import type { KeyServiceDeps } from '../src/keys';
import { LastUsedRecorder } from '../src/last-used';
import type { NewKeyRequest } from '../src/keys';
import { AuthStore } from '../src/store';

const config = parseGatewayConfig(readFileSync(join(__dirname, '../../../deploy/local/gateway.yaml'), 'utf8'), {});
const oldPepper = { id: 'p1', secret: 'first-pepper-secret-value' };
const newPepper = { id: 'p2', secret: 'second-pepper-secret-value' };

describe('KeyService against real PostgreSQL', () => {
  let database: TestDatabase;
  let pool: Pool;
  let keys: KeyService;
  let accountId: string;
  const format = new KeyFormat('gw');
  const keyRequest = (overrides: Partial<NewKeyRequest> = {}): NewKeyRequest => ({
    accountId,
    name: 'k',
    environment: 'live',
    residency: 'eu',
    privacyMode: 'off',
    allowedModels: null,
    allowedIps: null,
    expiresAt: null,
    ...overrides,
  });
  const announced: unknown[] = [];
  const service = (peppers: KeyServiceDeps['peppers']) =>
    new KeyService({
      store: new AuthStore(pool),
      format,
      peppers,
      config,
      cache: new VerifiedKeyCache(5_000),
      lastUsed: new LastUsedRecorder(
        (ids) => new AuthStore(pool).touchKeys(ids),
        () => undefined,
      ),
      announce: async (notice) => {
        announced.push(notice);
      },
    });
  const issue = async (overrides: Partial<NewKeyRequest> = {}) => {
    const created = await keys.createKey(keyRequest(overrides));
    if (!created.ok) throw new Error(created.error.message);
    return created.value;
  };

  beforeAll(async () => {
    database = await createTestDatabase('gateway_test_auth');
    pool = createPool(database.url, () => undefined);
    keys = service([oldPepper]);
    const account = await keys.createAccount('Acme', 'starter');
    if (!account.ok) throw new Error(account.error.message);
    accountId = account.value.id;
  });

  afterAll(async () => {
    await pool.end();
    await database.drop();
  });

  it('stores only a hash and a display prefix, and verifies the key once issued', async () => {
    const { key, record } = await issue();
    const { rows } = await pool.query('SELECT * FROM api_keys WHERE id = $1', [record.id]);
    expect(JSON.stringify(rows)).not.toContain(key.slice('gw_live_'.length));
    expect(rows[0].display_prefix).toBe(key.slice(0, 12));
    const verified = await keys.verify(key, '127.0.0.1');
    expect(verified.ok && verified.value.key.id).toBe(record.id);
  });

  it('refuses missing, malformed, unknown, revoked and expired keys alike', async () => {
    const revoked = await issue();
    expect((await keys.revokeKey(revoked.record.id)).ok).toBe(true);
    const again = await keys.revokeKey(revoked.record.id);
    expect(again.ok && again.value.revokedAt).toEqual(revoked.record.revokedAt ?? expect.any(Date));
    expect(announced).toContainEqual({ keyId: revoked.record.id });
    const expired = await issue({ expiresAt: new Date(Date.now() - 1) });
    const presented = ['', 'nonsense', format.issue('live').key, revoked.key, expired.key];
    const results = await Promise.all(presented.map((key) => keys.verify(key, '127.0.0.1')));
    const bodies = new Set(results.map((result) => JSON.stringify(result)));
    expect(bodies.size).toBe(1);
    expect(results[0]).toEqual({ ok: false, error: expect.objectContaining({ type: 'authentication_error' }) });
  });

  it('refuses a source outside the allow-list with permission_error', async () => {
    const { key } = await issue({ allowedIps: ['10.0.0.0/8', '2001:db8::/32'] });
    expect((await keys.verify(key, '::ffff:10.9.8.7')).ok).toBe(true);
    expect((await keys.verify(key, '2001:db8::5')).ok).toBe(true);
    expect(await keys.verify(key, '192.0.2.1')).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'permission_error' }),
    });
  });

  it('refuses keys of a suspended account with permission_error saying so', async () => {
    const account = await keys.createAccount('Suspended Ltd', 'starter');
    if (!account.ok) throw new Error(account.error.message);
    const { key } = await issue({ accountId: account.value.id });
    expect((await keys.verify(key, '127.0.0.1')).ok).toBe(true);
    expect((await keys.setSuspended(account.value.id, true)).ok).toBe(true);
    expect(announced).toContainEqual({ accountId: account.value.id });
    expect(await keys.verify(key, '127.0.0.1')).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'permission_error', message: expect.stringMatching(/suspended/) }),
    });
    expect((await keys.setSuspended(account.value.id, false)).ok).toBe(true);
    expect((await keys.verify(key, '127.0.0.1')).ok).toBe(true);
  });

  it('refuses a residency the plan does not permit', async () => {
    expect(await keys.createKey(keyRequest({ residency: 'uk' }))).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'invalid_request_error', message: expect.stringMatching(/residency/) }),
    });
  });

  it('issues admin keys that verify only as admin keys', async () => {
    const created = await keys.createAdminKey(accountId, 'ops');
    if (!created.ok) throw new Error(created.error.message);
    expect(created.value.key).toMatch(/^gw_admin_[A-Za-z0-9]{32}$/);
    const verified = await keys.verifyAdminKey(created.value.key);
    expect(verified.ok && verified.value.accountId).toBe(accountId);
    expect((await keys.verify(created.value.key, '127.0.0.1')).ok).toBe(false);
    const apiKey = await issue();
    expect((await keys.verifyAdminKey(apiKey.key)).ok).toBe(false);
  });

  it('stores limit overrides and clears them with null', async () => {
    const set = await keys.setLimits(accountId, { requestsPerMinute: 5, overage: true });
    expect(set.ok && set.value.limits).toEqual({
      requestsPerMinute: 5,
      concurrency: null,
      monthlyTokens: null,
      overage: true,
      hardCeilingTokens: null,
    });
    const cleared = await keys.setLimits(accountId, { requestsPerMinute: null });
    expect(cleared.ok && cleared.value.limits.requestsPerMinute).toBeNull();
    expect(await keys.setLimits(accountId, { concurrency: -1 })).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'invalid_request_error' }),
    });
  });

  it('writes last use in batches, at most once a minute per key', async () => {
    const writes: string[][] = [];
    const recorder = new LastUsedRecorder(
      async (ids) => {
        writes.push(ids);
        await new AuthStore(pool).touchKeys(ids);
      },
      () => undefined,
    );
    const { record } = await issue();
    for (let index = 0; index < 5; index += 1) recorder.record(record.id);
    await recorder.flush();
    recorder.record(record.id);
    await recorder.flush();
    expect(writes).toEqual([[record.id]]);
    const { rows } = await pool.query('SELECT last_used_at FROM api_keys WHERE id = $1', [record.id]);
    expect(Date.now() - new Date(rows[0].last_used_at).getTime()).toBeLessThan(60_000);
  });

  it('keeps verifying keys signed with an older pepper after rotation', async () => {
    const { key } = await issue();
    const rotated = service([newPepper, oldPepper]);
    expect((await rotated.verify(key, '127.0.0.1')).ok).toBe(true);
    const fresh = await rotated.createKey(keyRequest());
    expect(fresh.ok && fresh.value.record.pepperId).toBe('p2');
  });
});
