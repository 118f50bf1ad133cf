import { parseGatewayConfig } from '@gw/config';
import type { InvalidEntry } from '@gw/addresses';
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
import { AdminAccessStore } from '../src/admin-access-store';

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
    replacesKeyId: null,
    ...overrides,
  });
  const announced: unknown[] = [];
  const unusableEntries: { keyId: string; entries: readonly InvalidEntry[] }[] = [];
  const service = (peppers: KeyServiceDeps['peppers']) =>
    new KeyService({
      accessStore: new AdminAccessStore(pool),
      store: new AuthStore(pool),
      format,
      peppers,
      config,
      cache: new VerifiedKeyCache(5_000),
      lastUsed: new LastUsedRecorder(
        (ids) => new AuthStore(pool).touchKeys(ids),
        () => undefined,
      ),
      reportUnusableAllowListEntries: (keyId, entries) => unusableEntries.push({ keyId, entries }),
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
    // A key that has expired since it was issued (issuing one already expired is refused).
    const expired = await issue({ expiresAt: new Date(Date.now() + 3_600_000) });
    await pool.query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [expired.record.id]);
    const presented = ['', 'nonsense', format.issue('live').key, revoked.key, expired.key];
    const results = await Promise.all(presented.map((key) => keys.verify(key, '127.0.0.1')));
    // What the caller is told is the same; only the reason, which ingress counts and never sends, differs.
    const answers = results.map((result) => (result.ok ? result : { ...result.error, reason: undefined }));
    expect(new Set(answers.map((answer) => JSON.stringify(answer))).size).toBe(1);
    expect(results[0]).toEqual({ ok: false, error: expect.objectContaining({ type: 'authentication_error' }) });
    expect(results.map((result) => !result.ok && result.error.reason)).toEqual([
      'missing',
      'malformed',
      'unknown',
      'revoked',
      'expired',
    ]);
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

  it('refuses an allow-list entry in a legacy notation, naming it and its index', async () => {
    for (const [entry, reason] of [
      ['010.0.0.1', /is not an IPv4 address/],
      ['0xa.0.0.1', /is not an IPv4 address/],
      ['127.1', /is not an IPv4 address/],
      ['2130706433', /is not an IPv4 address/],
      ['10.0.0.1/8', /has bits set past its \/8 prefix/],
      ['fe80::1%eth0', /carries a zone/],
    ] as const) {
      const refused = await keys.createKey(keyRequest({ allowedIps: ['192.0.2.1', entry] }));
      expect(refused).toEqual({
        ok: false,
        error: { type: 'invalid_request_error', message: expect.stringMatching(reason) },
      });
      expect(!refused.ok && refused.error.message.startsWith(`allowed_ips.1: ${JSON.stringify(entry)} `)).toBe(true);
    }
    expect((await keys.createKey(keyRequest({ allowedIps: new Array<string>(1001).fill('192.0.2.1') }))).ok).toBe(
      false,
    );
  });

  it('keeps verifying a stored key whose allow-list has entries it can no longer read, failing closed on them', async () => {
    const { key, record } = await issue({ allowedIps: ['192.0.2.1'] });
    // As written before the notation rules: 010.0.0.1 then admitted 8.0.0.1, 10.0.0.1/8 all of 10/8.
    await pool.query('UPDATE api_keys SET allowed_ips = $2 WHERE id = $1', [
      record.id,
      ['010.0.0.1', '10.0.0.1/8', 'fe80::1%eth0', '127.0.0.1'],
    ]);
    expect((await keys.verify(key, '127.0.0.1')).ok).toBe(true);
    for (const source of ['8.0.0.1', '10.0.0.1', '10.0.0.2', 'fe80::1']) {
      expect(await keys.verify(key, source)).toEqual({
        ok: false,
        error: expect.objectContaining({ type: 'permission_error' }),
      });
    }
    expect(unusableEntries).toContainEqual({
      keyId: record.id,
      entries: [0, 1, 2].map((index) => ({ index, reason: expect.any(String) })),
    });
    const listed = await keys.getKey(record.id);
    expect(listed.ok && listed.value.allowedIps).toEqual(['010.0.0.1', '10.0.0.1/8', 'fe80::1%eth0', '127.0.0.1']);
  });

  it('refuses names that are empty, too long or hold control characters, and trims the rest', async () => {
    for (const name of ['  ', 'n'.repeat(201), 'a\u0000b', 'a\u001b[2Jb']) {
      expect(await keys.createAccount(name, 'starter')).toEqual({
        ok: false,
        error: expect.objectContaining({ type: 'invalid_request_error', message: expect.stringMatching(/^name: /) }),
      });
      expect((await keys.createKey(keyRequest({ name }))).ok).toBe(false);
      expect((await keys.createAdminKey(accountId, name)).ok).toBe(false);
    }
    const longest = await keys.createAccount(` ${'n'.repeat(200)} `, 'starter');
    expect(longest.ok && longest.value.name).toBe('n'.repeat(200));
  });

  it('refuses too many or too long allowed models, and cuts an unknown one in the message', async () => {
    expect(
      (await keys.createKey(keyRequest({ allowedModels: new Array<string>(1001).fill('claude-sonnet-5') }))).ok,
    ).toBe(false);
    expect((await keys.createKey(keyRequest({ allowedModels: ['m'.repeat(257)] }))).ok).toBe(false);
    expect(await keys.createKey(keyRequest({ allowedModels: ['claude-sonnet-5', 'x'.repeat(256)] }))).toEqual({
      ok: false,
      error: expect.objectContaining({ message: `allowed_models.1: unknown model "${'x'.repeat(64)}…".` }),
    });
  });

  it('refuses an expiry in the past, naming the field', async () => {
    expect(await keys.createKey(keyRequest({ expiresAt: new Date(Date.now() - 1_000) }))).toEqual({
      ok: false,
      error: { type: 'invalid_request_error', message: 'expires_at: expected a time in the future.' },
    });
  });

  it('answers not found for ids that cannot exist, NUL included, without asking PostgreSQL', async () => {
    for (const id of ['acct_\u0000', '\u00ff\u00fe', 'x'.repeat(100_000)]) {
      const notFound = { ok: false, error: expect.objectContaining({ type: 'not_found_error' }) };
      expect(await keys.getAccount(id)).toEqual(notFound);
      expect(await keys.setSuspended(id, true)).toEqual(notFound);
      expect(await keys.setLimits(id, { concurrency: 1 })).toEqual(notFound);
      expect(await keys.listKeys(id)).toEqual(notFound);
      expect(await keys.getKey(id)).toEqual(notFound);
      expect(await keys.revokeKey(id)).toEqual(notFound);
      expect(await keys.createKey(keyRequest({ accountId: id }))).toEqual(notFound);
      expect(await keys.createAdminKey(id, 'ops')).toEqual(notFound);
    }
    const long = await keys.getAccount('x'.repeat(100_000));
    expect(!long.ok && long.error.message).toBe(`No account with id "${'x'.repeat(64)}…".`);
    const nul = await keys.getKey('key_\u0000');
    expect(!nul.ok && nul.error.message).toBe('No key with id "key_\\u0000".');
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

  it('rotates a key into a new one with its settings, both verifying until the old one is revoked', async () => {
    const old = await issue({ name: 'to-rotate', privacyMode: 'redact', allowedIps: ['127.0.0.0/8'] });
    const rotated = await keys.rotateKey(old.record.id, accountId);
    if (!rotated.ok) throw new Error(rotated.error.message);
    expect(rotated.value.replaced.id).toBe(old.record.id);
    expect(rotated.value.record).toMatchObject({
      accountId,
      name: 'to-rotate',
      privacyMode: 'redact',
      allowedIps: ['127.0.0.0/8'],
      replacesKeyId: old.record.id,
      revokedAt: null,
    });
    expect((await keys.verify(old.key, '127.0.0.1')).ok).toBe(true);
    expect((await keys.verify(rotated.value.key, '127.0.0.1')).ok).toBe(true);
    expect(await keys.rotateKey(old.record.id, 'acct_other')).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'not_found_error' }),
    });
    await keys.revokeKey(old.record.id);
    expect(await keys.rotateKey(old.record.id)).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'invalid_request_error', message: expect.stringMatching(/revoked/) }),
    });
    expect(await keys.rotateKey('key_unknown')).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'not_found_error' }),
    });
  });

  it('never leaves a rotated key without a working successor when a revocation races the rotation', async () => {
    const replacements = async (keyId: string) =>
      (await pool.query<{ id: string }>('SELECT id FROM api_keys WHERE replaces_key_id = $1', [keyId])).rows;
    // A revocation committed while the rotation waits for the row: the rotation sees it and makes nothing.
    const held = await issue();
    const holder = await pool.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM api_keys WHERE id = $1 FOR UPDATE', [held.record.id]);
    const waiting = keys.rotateKey(held.record.id);
    await holder.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [held.record.id]);
    await holder.query('COMMIT');
    holder.release();
    expect(await waiting).toEqual({ ok: false, error: expect.objectContaining({ type: 'invalid_request_error' }) });
    expect(await replacements(held.record.id)).toEqual([]);
    // Raced many times: either the rotation came first (its new key works, the old one was live when it was
    // made) or the revocation did (no new key). Never a new key of a key already revoked, never neither.
    for (let round = 0; round < 15; round += 1) {
      const old = await issue();
      const [rotated] = await Promise.all([keys.rotateKey(old.record.id), keys.revokeKey(old.record.id)]);
      const made = await replacements(old.record.id);
      if (rotated.ok) {
        expect(rotated.value.replaced.revokedAt).toBeNull();
        expect(made.map((row) => row.id)).toEqual([rotated.value.record.id]);
        expect((await keys.verify(rotated.value.key, '127.0.0.1')).ok).toBe(true);
      } else {
        expect(rotated.error.type).toBe('invalid_request_error');
        expect(made).toEqual([]);
      }
      await keys.revokeKey(rotated.ok ? rotated.value.record.id : old.record.id);
    }
  });

  it('issues admin keys that verify only as admin keys', async () => {
    const created = await keys.createAdminKey(accountId, 'ops');
    if (!created.ok) throw new Error(created.error.message);
    expect(created.value.key).toMatch(/^gw_admin_[A-Za-z0-9]{32}$/);
    const verified = await keys.verifyAdminKey(created.value.key);
    expect(verified.ok && verified.value.key.accountId).toBe(accountId);
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
    // Past its 32-bit column: refused by name, never a database error.
    expect(await keys.setLimits(accountId, { requestsPerMinute: 2_147_483_648 })).toEqual({
      ok: false,
      error: {
        type: 'invalid_request_error',
        message: 'requests_per_minute: expected a positive integer up to 2147483647 or null.',
      },
    });
    expect((await keys.setLimits(accountId, { requestsPerMinute: 2_147_483_647 })).ok).toBe(true);
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
