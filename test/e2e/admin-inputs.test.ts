import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { repoRoot } from '@gw/local-stack';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin, rawRequest } from './http';
import type { RawResponse } from './http';

const h = harness();

interface Envelope {
  type: 'error';
  error: { type: string; message: string };
  request_id: string;
}

interface KeyResource {
  id: string;
  key: string;
  allowed_ips: string[] | null;
}

const keyBody = (overrides: Record<string, unknown> = {}) => ({
  account_id: h.accountId,
  name: 'inputs',
  environment: 'test',
  residency: 'eu',
  privacy_mode: 'off',
  ...overrides,
});

/** An admin call with full control of the path and the raw body, as the operator. */
function adminRaw(method: string, path: string, body?: string, headers: Record<string, string> = {}) {
  return rawRequest(`${h.adminUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${h.adminToken}`, ...headers },
    body,
  });
}

/** The answer is the error envelope with this status and type, and carries its request id in the header. */
function expectRefusal(response: RawResponse, status: number, type: string): Envelope {
  // Compared with the start of the body, so that a wrong status shows what came instead.
  expect({ status: response.status, body: response.body.slice(0, 300) }).toMatchObject({ status });
  const envelope = JSON.parse(response.body) as Envelope;
  expect(envelope).toEqual({
    type: 'error',
    error: { type, message: expect.any(String) },
    request_id: expect.any(String),
  });
  expect(response.headers['x-request-id']).toBe(envelope.request_id);
  return envelope;
}

async function refusedKey(overrides: Record<string, unknown>): Promise<Envelope> {
  return expectRefusal(
    await adminRaw('POST', '/keys', JSON.stringify(keyBody(overrides))),
    400,
    'invalid_request_error',
  );
}

describe('admin API inputs', () => {
  describe('allow-list notation', () => {
    it.each([
      ['010.0.0.1', 'is not an IPv4 address'],
      ['0xa.0.0.1', 'is not an IPv4 address'],
      ['127.1', 'is not an IPv4 address'],
      ['2130706433', 'is not an IPv4 address'],
      ['10.0.0.1/8', 'has bits set past its /8 prefix; the range is written 10.0.0.0/8.'],
      ['fe80::1%eth0', 'carries a zone'],
    ])('refuses %s with 400 naming the entry and its index', async (entry, reason) => {
      const refused = await refusedKey({ allowed_ips: ['192.0.2.1', entry] });
      expect(refused.error.message).toContain(`allowed_ips.1: ${JSON.stringify(entry)} ${reason}`);
    });

    it('accepts canonical IPv4 and IPv6 addresses and ranges', async () => {
      const entries = ['192.0.2.7', '10.0.0.0/8', '2001:db8::/32', '::1', '::ffff:10.0.0.0/104'];
      const created = await admin<KeyResource>(h, 'POST', '/keys', keyBody({ allowed_ips: entries }));
      expect(created.status).toBe(201);
      expect(created.body.allowed_ips).toEqual(entries);
    });

    it('cuts a long entry in the message and refuses more than 1,000 entries', async () => {
      const long = await refusedKey({ allowed_ips: ['1'.repeat(200_000)] });
      expect(long.error.message).toMatch(new RegExp(`^allowed_ips\\.0: "${'1'.repeat(64)}…" is not `));
      expect(long.error.message.length).toBeLessThan(300);
      const many = await refusedKey({ allowed_ips: new Array<string>(1001).fill('192.0.2.1') });
      expect(many.error.message).toBe('allowed_ips: expected at most 1000 entries.');
    });

    it('keeps a stored key with entries it can no longer read working, failing closed on those entries', async () => {
      const rewrite = async (keyId: string, entries: string[]) => {
        const client = new Client({ connectionString: h.databaseUrl });
        await client.connect();
        try {
          // As written before the notation rules, when 010.0.0.1 meant 8.0.0.1 and 127.0.0.1/8 all of 127/8.
          await client.query('UPDATE api_keys SET allowed_ips = $2 WHERE id = $1', [keyId, entries]);
        } finally {
          await client.end();
        }
      };
      const models = (key: string) =>
        rawRequest(`${h.baseUrl}/v1/models`, { method: 'GET', headers: { 'x-api-key': key } });
      const mixed = (await admin<KeyResource>(h, 'POST', '/keys', keyBody({ allowed_ips: ['192.0.2.1'] }))).body;
      await rewrite(mixed.id, ['010.0.0.1', '127.0.0.1']);
      const onlyLegacy = (await admin<KeyResource>(h, 'POST', '/keys', keyBody({ allowed_ips: ['192.0.2.1'] }))).body;
      await rewrite(onlyLegacy.id, ['127.0.0.1/8']);

      expect((await models(mixed.key)).status).toBe(200);
      expectRefusal(await models(onlyLegacy.key), 403, 'permission_error');
      const listed = await admin<KeyResource>(h, 'GET', `/keys/${onlyLegacy.id}`);
      expect({ status: listed.status, allowed_ips: listed.body.allowed_ips }).toEqual({
        status: 200,
        allowed_ips: ['127.0.0.1/8'],
      });

      const authLog = join(h.logsDir, 'auth.log');
      const reported = (keyId: string) => async () =>
        (await readFile(authLog, 'utf8'))
          .split('\n')
          .some((line) => line.includes('stored allow-list entries match nothing') && line.includes(keyId));
      await waitUntil(reported(mixed.id), { what: `auth's report of ${mixed.id}` });
      await waitUntil(reported(onlyLegacy.id), { what: `auth's report of ${onlyLegacy.id}` });
      expect(await readFile(authLog, 'utf8')).not.toContain('010.0.0.1');
    });
  });

  describe('refusals, never 500', () => {
    it.each([
      ['GET', '/accounts/%ff', 400],
      ['GET', '/keys/%ff%fe', 400],
      ['POST', '/keys/%e0%a4/revoke', 400],
      ['GET', '/accounts/%00', 404],
      ['GET', '/keys/key_%00', 404],
      ['POST', '/keys/%00/revoke', 404],
      ['POST', '/accounts/%00/suspend', 404],
      ['POST', '/accounts/acct_%00/admin-keys', 404],
    ])('answers %s %s with %i in the envelope', async (method, path, status) => {
      const body = method === 'POST' ? JSON.stringify({ name: 'x' }) : undefined;
      const refused = expectRefusal(
        await adminRaw(method, path, body),
        status,
        status === 400 ? 'invalid_request_error' : 'not_found_error',
      );
      expect(refused.error.message).not.toContain('\u0000');
    });

    it('refuses names holding NUL or other control characters', async () => {
      for (const name of ['a\u0000b', 'a\u001b[2Jb', 'line\nbreak']) {
        const account = await adminRaw('POST', '/accounts', JSON.stringify({ name, plan: 'pro' }));
        expect(expectRefusal(account, 400, 'invalid_request_error').error.message).toBe(
          'name: must not contain control characters.',
        );
        expectRefusal(await adminRaw('POST', '/keys', JSON.stringify(keyBody({ name }))), 400, 'invalid_request_error');
      }
    });

    it('answers a body over the limit with 413 request_too_large in the envelope', async () => {
      const oversized = JSON.stringify({ name: 'x'.repeat(1024 * 1024), plan: 'pro' });
      expectRefusal(await adminRaw('POST', '/accounts', oversized), 413, 'request_too_large');
      const undeclared = await adminRaw('POST', '/accounts', oversized, { 'transfer-encoding': 'chunked' });
      expectRefusal(undeclared, 413, 'request_too_large');
    });

    it('answers malformed JSON and a non-object body with 400', async () => {
      const malformed = expectRefusal(await adminRaw('POST', '/accounts', '{"name": '), 400, 'invalid_request_error');
      expect(malformed.error.message).toBe('The request body is not valid JSON.');
      const list = expectRefusal(await adminRaw('POST', '/accounts', '[]'), 400, 'invalid_request_error');
      expect(list.error.message).toBe('The request body must be a JSON object.');
    });

    it('refuses a limit its column cannot hold', async () => {
      const refused = await adminRaw('PATCH', `/accounts/${h.accountId}/limits`, '{"requests_per_minute":2147483648}');
      expect(expectRefusal(refused, 400, 'invalid_request_error').error.message).toMatch(/^requests_per_minute: /);
    });

    it('cuts a long unknown path in the 404', async () => {
      const refused = expectRefusal(await adminRaw('GET', `/${'p'.repeat(5000)}`), 404, 'not_found_error');
      expect(refused.error.message.length).toBeLessThan(120);
    });
  });

  describe('public model ids', () => {
    it.each(['%', '%ff%fe', '%e0%a4'])('answers GET /v1/models/%s with 400 in the envelope, never 500', async (id) => {
      const response = await rawRequest(`${h.baseUrl}/v1/models/${id}`, {
        method: 'GET',
        headers: { 'x-api-key': h.testKey },
      });
      expectRefusal(response, 400, 'invalid_request_error');
    });

    it('answers an id with NUL or of great length with 404, cut and escaped', async () => {
      const response = await rawRequest(`${h.baseUrl}/v1/models/%00${'m'.repeat(10_000)}`, {
        method: 'GET',
        headers: { 'x-api-key': h.testKey },
      });
      const refused = expectRefusal(response, 404, 'not_found_error');
      expect(refused.error.message).toContain(`model: "\\u0000${'m'.repeat(63)}…" is not available`);
    });
  });

  describe('names and models', () => {
    it('accepts names of up to 200 characters after trimming, and refuses longer or empty ones', async () => {
      const longest = await admin<{ name: string }>(h, 'POST', '/accounts', {
        name: ` ${'n'.repeat(200)} `,
        plan: 'pro',
      });
      expect({ status: longest.status, name: longest.body.name }).toEqual({ status: 201, name: 'n'.repeat(200) });
      for (const name of ['n'.repeat(201), 'n'.repeat(300_000), '   ']) {
        expectRefusal(
          await adminRaw('POST', '/accounts', JSON.stringify({ name, plan: 'pro' })),
          400,
          'invalid_request_error',
        );
        expectRefusal(await adminRaw('POST', '/keys', JSON.stringify(keyBody({ name }))), 400, 'invalid_request_error');
        const adminKey = await adminRaw('POST', `/accounts/${h.accountId}/admin-keys`, JSON.stringify({ name }));
        expect(expectRefusal(adminKey, 400, 'invalid_request_error').error.message).toMatch(/^name: /);
      }
    });

    it('refuses more than 1,000 allowed models or ids over 256 characters', async () => {
      expect(
        (await refusedKey({ allowed_models: new Array<string>(1001).fill('claude-sonnet-5') })).error.message,
      ).toBe('allowed_models: expected at most 1000 models.');
      expect((await refusedKey({ allowed_models: ['m'.repeat(257)] })).error.message).toBe(
        'allowed_models.0: expected a model id of 1 to 256 characters.',
      );
    });

    it('cuts every echoed value to 64 characters', async () => {
      const plan = expectRefusal(
        await adminRaw('POST', '/accounts', JSON.stringify({ name: 'x', plan: 'p'.repeat(100_000) })),
        400,
        'invalid_request_error',
      );
      expect(plan.error.message).toContain(`"${'p'.repeat(64)}…"`);
      const model = await refusedKey({ allowed_models: ['u'.repeat(256)] });
      expect(model.error.message).toBe(`allowed_models.0: unknown model "${'u'.repeat(64)}…".`);
      const field = expectRefusal(
        await adminRaw('POST', '/accounts', JSON.stringify({ name: 'x', plan: 'pro', ['f'.repeat(100_000)]: 1 })),
        400,
        'invalid_request_error',
      );
      expect(field.error.message).toBe(`unknown field "${'f'.repeat(64)}…".`);
      const account = expectRefusal(
        await adminRaw('GET', `/accounts/acct_${'a'.repeat(10_000)}`),
        404,
        'not_found_error',
      );
      expect(account.error.message.length).toBeLessThan(100);
    });
  });

  describe('expiry', () => {
    it('refuses expires_at in the past, naming the field', async () => {
      expect((await refusedKey({ expires_at: new Date(Date.now() - 60_000).toISOString() })).error.message).toBe(
        'expires_at: expected a time in the future.',
      );
    });
  });

  describe('gwctl', () => {
    const cli = join(repoRoot, 'tools/gwctl/dist/main.js');
    const gwctl = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
        execFile(
          process.execPath,
          [cli, ...args],
          {
            env: { PATH: process.env.PATH ?? '', GW_ADMIN_URL: h.adminUrl, GW_ADMIN_TOKEN: h.adminToken },
            cwd: tmpdir(),
            timeout: 20_000,
          },
          (error, stdout, stderr) =>
            done({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
        );
      });
    const createKey = (...extra: string[]) =>
      gwctl(
        'keys',
        'create',
        '--account',
        h.accountId,
        '--name',
        'cli',
        '--env',
        'test',
        '--residency',
        'eu',
        '--privacy-mode',
        'off',
        ...extra,
      );

    it('prints the refusal of a legacy allow-list entry as one line naming it', async () => {
      const run = await createKey('--allowed-ips', '192.0.2.1,010.0.0.1');
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(
        /^error: allowed_ips\.1: "010\.0\.0\.1" is not an IPv4 address .* \(invalid_request_error, HTTP 400, request id req_\w+\)\n$/,
      );
    });

    it('prints the refusal of a past expiry and of an unprintable name', async () => {
      const past = await createKey('--expires-at', '2020-01-01T00:00:00Z');
      expect({ code: past.code, stderr: past.stderr }).toEqual({
        code: 1,
        stderr: expect.stringMatching(
          /^error: expires_at: expected a time in the future\. \(invalid_request_error, HTTP 400/,
        ),
      });
      const named = await gwctl('accounts', 'create', '--name', 'a\u001b[2Jb', '--plan', 'pro');
      expect({ code: named.code, stderr: named.stderr }).toEqual({
        code: 1,
        stderr: expect.stringMatching(/^error: name: must not contain control characters\. \(invalid_request_error/),
      });
    });
  });
});
