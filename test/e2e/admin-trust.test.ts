import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '@gw/local-stack';
import { Client } from 'pg';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin, rawRequest } from './http';

const h = harness();

interface Account {
  id: string;
}

interface AdminKey {
  id: string;
  account_id: string;
  status: string;
  expires_at: string | null;
  last_used_at: string | null;
  key?: string;
}

interface Verification {
  valid: boolean;
  entries_checked: number;
  head: { seq: number; hash: string };
  published_head: { seq: number; hash: string } | null;
  failure: { seq: number; reason: string } | null;
}

/** One admin API call with a given credential, from a given loopback address. */
async function call<T>(token: string, method: string, path: string, body?: unknown, localAddress = '127.0.0.1') {
  const response = await rawRequest(`${h.adminUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}` },
    body: body === undefined ? undefined : JSON.stringify(body),
    localAddress,
  });
  return { status: response.status, headers: response.headers, body: JSON.parse(response.body) as T };
}

/** The compiled CLI as a user runs it, with the given credential. */
function gwctl(token: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [join(repoRoot, 'tools/gwctl/dist/main.js'), ...args],
      { env: { PATH: process.env.PATH ?? '', GW_ADMIN_URL: h.adminUrl, GW_ADMIN_TOKEN: token }, cwd: tmpdir() },
      (error, stdout, stderr) =>
        done({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

const newKey = (accountId: string, name: string) => ({
  account_id: accountId,
  name,
  environment: 'test',
  residency: 'eu',
  privacy_mode: 'off',
});

describe('admin keys: lifecycle and suspension', () => {
  let account: Account;

  beforeAll(async () => {
    account = (await admin<Account>(h, 'POST', '/accounts', { name: 'Trust Ltd', plan: 'starter' })).body;
  });

  it('lists admin keys, creates one with an expiry, shows its value once and its last use', async () => {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const created = await admin<AdminKey>(h, 'POST', `/accounts/${account.id}/admin-keys`, {
      name: 'ops',
      expires_at: expiresAt,
    });
    expect(created.status).toBe(201);
    expect(created.body.expires_at).toBe(expiresAt);
    expect((await call(created.body.key!, 'GET', `/accounts/${account.id}`)).status).toBe(200);
    const listed = await admin<{ data: AdminKey[]; next_after: string | null }>(
      h,
      'GET',
      `/accounts/${account.id}/admin-keys`,
    );
    expect(listed.status).toBe(200);
    const shown = listed.body.data.find((key) => key.id === created.body.id)!;
    expect(shown).toEqual(expect.objectContaining({ status: 'active', expires_at: expiresAt }));
    expect(shown).not.toHaveProperty('key');
    expect(JSON.stringify(listed.body)).not.toContain(created.body.key);
    const used = await waitUntil(
      async () =>
        (await admin<{ data: AdminKey[] }>(h, 'GET', `/accounts/${account.id}/admin-keys`)).body.data.find(
          (key) => key.id === created.body.id,
        )?.last_used_at,
      { timeoutMs: 15_000, intervalMs: 250, what: 'the admin key to show its last use' },
    );
    expect(Date.parse(used!)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('refuses an admin key at its next request once revoked', async () => {
    const created = (await admin<AdminKey>(h, 'POST', `/accounts/${account.id}/admin-keys`, { name: 'leaked' })).body;
    const key = created.key!;
    expect((await call(key, 'GET', `/keys?account_id=${account.id}`)).status).toBe(200);
    const revoked = await call<AdminKey>(key, 'POST', `/admin-keys/${created.id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.status).toBe('revoked');
    expect((await call(key, 'GET', `/keys?account_id=${account.id}`)).status).toBe(401);
  });

  it("lets a suspended account's admin key read but change nothing", async () => {
    const own = (await admin<Account>(h, 'POST', '/accounts', { name: 'Suspended Ltd', plan: 'starter' })).body;
    const adminKey = (await admin<AdminKey>(h, 'POST', `/accounts/${own.id}/admin-keys`, { name: 'ops' })).body;
    const other = (await admin<AdminKey>(h, 'POST', `/accounts/${own.id}/admin-keys`, { name: 'ops2' })).body;
    const existing = (await admin<{ id: string }>(h, 'POST', '/keys', newKey(own.id, 'existing'))).body;
    expect((await admin(h, 'POST', `/accounts/${own.id}/suspend`)).status).toBe(200);
    const key = adminKey.key!;
    const attempts = [
      await call(key, 'POST', '/keys', newKey(own.id, 'new')),
      await call(key, 'POST', `/keys/${existing.id}/revoke`),
      await call(key, 'POST', `/keys/${existing.id}/rotate`),
      await call(key, 'PATCH', `/keys/${existing.id}`, { name: 'renamed' }),
      await call(key, 'POST', `/admin-keys/${other.id}/revoke`),
    ];
    for (const attempt of attempts) {
      expect(attempt.status).toBe(403);
      expect(attempt.body).toEqual(
        expect.objectContaining({ error: expect.objectContaining({ type: 'permission_error' }) }),
      );
    }
    const keys = await call<{ data: { id: string; name: string; status: string }[] }>(
      key,
      'GET',
      `/keys?account_id=${own.id}`,
    );
    expect(keys.status).toBe(200);
    expect(keys.body.data).toEqual([expect.objectContaining({ id: existing.id, name: 'existing', status: 'active' })]);
    const admins = await admin<{ data: AdminKey[] }>(h, 'GET', `/accounts/${own.id}/admin-keys`);
    expect(admins.body.data.every((entry) => entry.status === 'active')).toBe(true);
  });

  it('slows bad admin credentials from one address and not from another', async () => {
    const attacker = '127.0.0.31';
    const bystander = '127.0.0.32';
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 12; attempt += 1) {
      statuses.push(
        (await call('gw_admin_wrongwrongwrongwrongwrongwrong', 'GET', '/accounts', undefined, attacker)).status,
      );
    }
    // Ten at once (the documented burst), then refused before any check.
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(statuses.slice(10)).toEqual([429, 429]);
    const throttled = await call<{ error: { type: string } }>(h.adminToken, 'GET', '/accounts', undefined, attacker);
    expect(throttled.status).toBe(429);
    expect(throttled.body.error.type).toBe('rate_limit_error');
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(throttled.headers['retry-after'])).toBeLessThanOrEqual(6);
    expect((await call('gw_admin_wrong', 'GET', '/accounts', undefined, bystander)).status).toBe(401);
    expect((await call(h.adminToken, 'GET', '/accounts', undefined, bystander)).status).toBe(200);
  });
});

describe('bounds, pages and names', () => {
  let account: Account;

  beforeAll(async () => {
    account = (await admin<Account>(h, 'POST', '/accounts', { name: 'Bounded Ltd', plan: 'starter' })).body;
  });

  it('refuses names with bidirectional controls or invisible characters', async () => {
    for (const name of ['\u202Egnp.exe', 'a\u200Bb', '\u2066x\u2069', 'x\uFEFFy', '\u3164']) {
      const created = await admin<{ error: { type: string; message: string } }>(
        h,
        'POST',
        '/keys',
        newKey(account.id, name),
      );
      expect(created.status).toBe(400);
      expect(created.body.error.message).toMatch(
        /^name: must not contain bidirectional controls or invisible characters/,
      );
    }
    expect((await admin(h, 'POST', '/keys', newKey(account.id, 'Zoë – café 東京'))).status).toBe(201);
  });

  it('pages, searches and filters keys, and edits a key', async () => {
    const ids: string[] = [];
    for (const name of ['alpha-1', 'alpha-2', 'beta-1', 'alpha-3']) {
      ids.push((await admin<{ id: string }>(h, 'POST', '/keys', newKey(account.id, name))).body.id);
    }
    await admin(h, 'POST', `/keys/${ids[1]}/revoke`);
    const seen: string[] = [];
    let after: string | null = '';
    for (let pages = 0; after !== null && pages < 10; pages += 1) {
      const page: { status: number; body: { data: { id: string }[]; next_after: string | null } } = await admin(
        h,
        'GET',
        `/keys?account_id=${account.id}&limit=2${after ? `&after=${after}` : ''}`,
      );
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.data.map((key) => key.id));
      after = page.body.next_after;
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining(ids));
    const alphasActive = await admin<{ data: { name: string }[] }>(
      h,
      'GET',
      `/keys?account_id=${account.id}&q=ALPHA&status=active`,
    );
    expect(alphasActive.body.data.map((key) => key.name)).toEqual(['alpha-3', 'alpha-1']);
    expect((await admin(h, 'GET', `/keys?account_id=${account.id}&limit=201`)).status).toBe(400);
    expect((await admin(h, 'GET', `/keys?account_id=${account.id}&status=lost`)).status).toBe(400);

    const edited = await admin<{ name: string; allowed_ips: string[] | null }>(h, 'PATCH', `/keys/${ids[0]}`, {
      name: 'alpha-one',
      allowed_ips: ['192.0.2.0/24'],
    });
    expect(edited.status).toBe(200);
    expect(edited.body).toEqual(expect.objectContaining({ name: 'alpha-one', allowed_ips: ['192.0.2.0/24'] }));
    const audit = await admin<{ data: { before: { name: string }; after: { name: string } }[] }>(
      h,
      'GET',
      `/audit?account_id=${account.id}&action=key.update`,
    );
    expect(audit.body.data[0]).toEqual(
      expect.objectContaining({
        before: expect.objectContaining({ name: 'alpha-1' }),
        after: expect.objectContaining({ name: 'alpha-one' }),
      }),
    );
    expect((await admin(h, 'PATCH', `/keys/${ids[1]}`, { name: 'revoked' })).status).toBe(400);
  });

  it('holds an account to its documented number of admin keys', async () => {
    const own = (await admin<Account>(h, 'POST', '/accounts', { name: 'Many Admins Ltd', plan: 'starter' })).body;
    for (let index = 0; index < 20; index += 1) {
      expect((await admin(h, 'POST', `/accounts/${own.id}/admin-keys`, { name: `ops-${index}` })).status).toBe(201);
    }
    const refused = await admin<{ error: { message: string } }>(h, 'POST', `/accounts/${own.id}/admin-keys`, {
      name: 'one more',
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/20 admin keys/);
  });

  it('answers the admin API only for its configured host names', async () => {
    const withHost = (host: string, path: string) =>
      rawRequest(`${h.adminUrl}${path}`, { method: 'GET', headers: { host, authorization: `Bearer ${h.adminToken}` } });
    const port = new URL(h.adminUrl).port;
    expect((await withHost(`attacker.example:${port}`, '/admin/v1/accounts')).status).toBe(403);
    expect((await withHost('attacker.example', '/')).status).toBe(403);
    expect((await withHost(`localhost:${port}`, '/admin/v1/accounts')).status).toBe(200);
    expect((await withHost(`attacker.example:${port}`, '/healthz')).status).toBe(200);
  });
});

describe('audit log', () => {
  let database: Client;

  beforeAll(async () => {
    database = new Client({ connectionString: h.databaseUrl });
    await database.connect();
  });

  afterAll(async () => {
    await database.end();
  });

  const verify = async () => (await admin<Verification>(h, 'GET', '/audit/verify')).body;

  /** Runs a tampering with the log's triggers off, checks what verification says, then puts every row back. */
  async function tampered(change: (rows: AuditRow[]) => Promise<void>): Promise<Verification> {
    const { rows } = await database.query<AuditRow>('SELECT * FROM admin_audit_log ORDER BY seq');
    await database.query('ALTER TABLE admin_audit_log DISABLE TRIGGER USER');
    try {
      await change(rows);
      return await verify();
    } finally {
      await database.query('DELETE FROM admin_audit_log');
      for (const row of rows) {
        await database.query(
          'INSERT INTO admin_audit_log (seq, at, account_id, entry, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6)',
          [row.seq, row.at, row.account_id, row.entry, row.prev_hash, row.hash],
        );
      }
      await database.query('ALTER TABLE admin_audit_log ENABLE TRIGGER USER');
    }
  }

  interface AuditRow {
    seq: string;
    at: Date;
    account_id: string | null;
    entry: string;
    prev_hash: Buffer;
    hash: Buffer;
  }

  let rotated: { id: string; replaces: string; account_id: string };

  beforeAll(async () => {
    const account = (await admin<Account>(h, 'POST', '/accounts', { name: 'Audited Ltd', plan: 'starter' })).body;
    const key = (await admin<{ id: string }>(h, 'POST', '/keys', newKey(account.id, 'to-rotate'))).body;
    rotated = (await admin<typeof rotated>(h, 'POST', `/keys/${key.id}/rotate`)).body;
    await admin(h, 'PATCH', `/accounts/${account.id}/limits`, { monthly_tokens: 5000 });
    await call('gw_admin_nope', 'GET', '/accounts', undefined, '127.0.0.41');
  });

  it('records changes with who, what, before and after, never a secret', async () => {
    const listed = await admin<{ data: Record<string, unknown>[] }>(
      h,
      'GET',
      `/audit?account_id=${rotated.account_id}&action=key.rotate`,
    );
    expect(listed.status).toBe(200);
    const [rotation] = listed.body.data;
    expect(rotation).toEqual(
      expect.objectContaining({
        action: 'key.rotate',
        actor: { kind: 'operator', id: null },
        account_id: rotated.account_id,
        target: { kind: 'key', id: rotated.id },
        before: expect.objectContaining({ id: rotated.replaces, status: 'active' }),
        after: expect.objectContaining({ id: rotated.id, replaces_key_id: rotated.replaces }),
        source_address: expect.any(String),
      }),
    );
    expect(JSON.stringify(rotation)).not.toMatch(/gw_(live|test|admin)_[A-Za-z0-9]{32}/);
    const refused = await admin<{ data: Record<string, unknown>[] }>(
      h,
      'GET',
      '/audit?action=admin_credential.refused',
    );
    expect(refused.body.data[0]).toEqual(
      expect.objectContaining({ actor: { kind: 'unknown', id: null }, source_address: '127.0.0.41' }),
    );
  });

  it("logs each change and refusal, and publishes each head in auth's log and metrics", async () => {
    const ingressLog = () => readFileSync(join(h.logsDir, 'ingress.log'), 'utf8');
    await waitUntil(
      () => ingressLog(),
      { what: 'the rotation in the log' },
      (text) =>
        text
          .split('\n')
          .some((line) => line.includes('"msg":"admin change"') && line.includes(`"target_id":"${rotated.id}"`)),
    );
    expect(ingressLog()).toMatch(/"source_address":"127\.0\.0\.41".*"msg":"admin credential refused"/);
    const head = (await admin<Verification>(h, 'GET', '/audit/verify')).body.head;
    const authLog = readFileSync(join(h.logsDir, 'auth.log'), 'utf8');
    expect(authLog).toContain(`"audit_seq":${head.seq},"audit_hash":"${head.hash}"`);
    const metrics = await (await fetch(h.metricsUrls.auth!)).text();
    expect(metrics).toMatch(new RegExp(`^gateway_audit_chain_head_sequence(\\{[^}]*\\})? ${head.seq}$`, 'm'));
    expect(metrics).toMatch(new RegExp(`^gateway_audit_chain_head_info\\{[^}]*hash="${head.hash}"[^}]*\\} 1$`, 'm'));
  });

  it('verifies the chain, and finds an altered, a removed and a rewritten entry where they are', async () => {
    const intact = await verify();
    expect(intact).toEqual(expect.objectContaining({ valid: true, failure: null }));
    expect(intact.published_head).toEqual(intact.head);
    const count = intact.head.seq;
    expect(count).toBeGreaterThanOrEqual(4);
    const middle = Math.ceil(count / 2);

    const altered = await tampered(async () => {
      await database.query(
        `UPDATE admin_audit_log SET entry = replace(entry, '"source_address"', '"source_addresz"') WHERE seq = $1`,
        [middle],
      );
    });
    expect(altered.failure).toEqual({ seq: middle, reason: expect.stringMatching(/does not match its hash/) });

    const removed = await tampered(async () => {
      await database.query('DELETE FROM admin_audit_log WHERE seq = $1', [middle]);
    });
    expect(removed.failure).toEqual({ seq: middle, reason: expect.stringMatching(/missing/) });

    const lastRemoved = await tampered(async () => {
      await database.query('DELETE FROM admin_audit_log WHERE seq = $1', [count]);
    });
    expect(lastRemoved.valid).toBe(false);
    expect(lastRemoved.failure).toEqual({ seq: count, reason: expect.stringMatching(/removed/) });

    // Rewritten from the middle with fresh hashes: every link holds, and the end differs from the published head.
    const rewritten = await tampered(async (rows) => {
      let previous = rows[middle - 2]!.hash;
      for (const row of rows.slice(middle - 1)) {
        const entry = row.entry.replace('"operator"', '"admin_key"');
        const hash = createHash('sha256').update(previous).update(`${row.seq}\n${entry}`).digest();
        await database.query('UPDATE admin_audit_log SET entry = $2, prev_hash = $3, hash = $4 WHERE seq = $1', [
          row.seq,
          entry,
          previous,
          hash,
        ]);
        previous = hash;
      }
    });
    expect(rewritten.valid).toBe(false);
    expect(rewritten.failure).toEqual({ seq: count, reason: expect.stringMatching(/rewritten/) });

    expect(await verify()).toEqual(expect.objectContaining({ valid: true }));
  });

  it('refuses to change or delete entries through ordinary statements', async () => {
    await expect(database.query('DELETE FROM admin_audit_log')).rejects.toThrow(/append-only/);
    await expect(database.query("UPDATE admin_audit_log SET entry = '{}'")).rejects.toThrow(/append-only/);
  });
});

describe('gwctl', () => {
  it('creates, lists and revokes admin keys, edits a key, and reads and verifies the audit log', async () => {
    const account = (await admin<Account>(h, 'POST', '/accounts', { name: 'Cli Ltd', plan: 'starter' })).body;
    const created = await gwctl(
      h.adminToken,
      'admin-keys',
      'create',
      '--account',
      account.id,
      '--name',
      'cli-ops',
      '--json',
    );
    expect(created.code).toBe(0);
    const adminKey = JSON.parse(created.stdout) as AdminKey;
    const listed = await gwctl(h.adminToken, 'admin-keys', 'list', '--account', account.id);
    expect(listed.stdout).toMatch(new RegExp(`${adminKey.id}\\s+cli-ops`));
    expect(listed.stdout).not.toContain(adminKey.key);

    const key = (await admin<{ id: string }>(h, 'POST', '/keys', newKey(account.id, 'cli-key'))).body;
    const edited = await gwctl(
      adminKey.key!,
      'keys',
      'edit',
      key.id,
      '--name',
      'cli-key-2',
      '--allowed-ips',
      '10.0.0.0/8',
      '--json',
    );
    expect(edited.code).toBe(0);
    expect(JSON.parse(edited.stdout)).toEqual(
      expect.objectContaining({ name: 'cli-key-2', allowed_ips: ['10.0.0.0/8'] }),
    );

    const audit = await gwctl(adminKey.key!, 'audit', 'list', '--action', 'key.');
    expect(audit.code).toBe(0);
    expect(audit.stdout).toMatch(
      new RegExp(`admin_key:${adminKey.id}\\s+\\S+\\s+key\\.update\\s+${account.id}\\s+${key.id}`),
    );

    expect((await gwctl(adminKey.key!, 'admin-keys', 'revoke', adminKey.id)).code).toBe(0);
    expect((await gwctl(adminKey.key!, 'audit', 'list')).code).toBe(1);
    const verified = await gwctl(h.adminToken, 'audit', 'verify');
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(/^valid\s+yes$/m);
  });
});
