import { rmSync } from 'node:fs';
import type { CliRun } from './fake-admin-api';
import {
  emptyDirectory,
  errorAnswer,
  FakeAdminApi,
  runCli,
  sampleAccount,
  sampleKey,
  sampleKeyValue,
} from './fake-admin-api';

const token = 'gw_operator_unit_test_Zq8xW3vN5mK2pL9rT4yH';
const api = new FakeAdminApi();
let cwd: string;

function gwctl(...args: string[]): Promise<CliRun> {
  return runCli(args, { cwd, env: { GW_ADMIN_URL: api.url, GW_ADMIN_TOKEN: token } });
}

/** What every run must satisfy, whatever it printed. */
function expectNoToken(run: CliRun): void {
  expect(run.stdout).not.toContain(token);
  expect(run.stderr).not.toContain(token);
}

beforeAll(async () => {
  cwd = emptyDirectory();
  await api.start();
});

afterAll(async () => {
  await api.stop();
  rmSync(cwd, { recursive: true, force: true });
});

beforeEach(() => api.reset());

describe('usage errors exit 2 with a message on stderr and send nothing', () => {
  it.each([
    { args: [], message: /Usage: gwctl/ },
    { args: ['accounts'], message: /Usage: gwctl accounts/ },
    { args: ['frobnicate'], message: /unknown command 'frobnicate'/ },
    { args: ['accounts', 'delete', 'acct_1'], message: /unknown command 'delete'/ },
    { args: ['accounts', 'list', '--verbose'], message: /unknown option '--verbose'/ },
    { args: ['accounts', 'create', '--name', 'Acme'], message: /required option '--plan <plan>' not specified/ },
    { args: ['accounts', 'show'], message: /missing required argument 'id'/ },
    { args: ['accounts', 'show', 'acct_1', 'acct_2'], message: /too many arguments/ },
    { args: ['accounts', 'set-limits', 'acct_1'], message: /give at least one of --rpm/ },
    { args: ['accounts', 'set-limits', 'acct_1', '--rpm', 'lots'], message: /'--rpm <n>' argument 'lots' is invalid/ },
    { args: ['accounts', 'set-limits', 'acct_1', '--rpm', '1.5'], message: /Expected a positive integer/ },
    { args: ['accounts', 'set-limits', 'acct_1', '--concurrency', '0'], message: /Expected a positive integer/ },
    { args: ['accounts', 'set-limits', 'acct_1', '--allowance', '-5'], message: /'--allowance <n>'/ },
    { args: ['accounts', 'set-limits', 'acct_1', '--ceiling', '1e6'], message: /Expected a positive integer/ },
    { args: ['accounts', 'set-limits', 'acct_1', '--overage', 'yes'], message: /Allowed choices are on, off/ },
    { args: ['keys', 'list'], message: /required option '--account <id>' not specified/ },
    { args: ['keys', 'revoke'], message: /missing required argument 'key-id'/ },
    {
      args: [
        'keys',
        'create',
        '--account',
        'a',
        '--name',
        'n',
        '--env',
        'prod',
        '--residency',
        'eu',
        '--privacy-mode',
        'off',
      ],
      message: /'--env <env>' argument 'prod' is invalid. Allowed choices are live, test/,
    },
    {
      args: [
        'keys',
        'create',
        '--account',
        'a',
        '--name',
        'n',
        '--env',
        'live',
        '--residency',
        'us',
        '--privacy-mode',
        'off',
      ],
      message: /Allowed choices are uk, eu/,
    },
    {
      args: [
        'keys',
        'create',
        '--account',
        'a',
        '--name',
        'n',
        '--env',
        'live',
        '--residency',
        'eu',
        '--privacy-mode',
        'on',
      ],
      message: /Allowed choices are off, flag, redact, tokenise/,
    },
    {
      args: ['keys', 'create', '--account', 'a', '--name', 'n', '--env', 'live', '--residency', 'eu'],
      message: /required option '--privacy-mode <mode>' not specified/,
    },
    {
      args: [
        ...['keys', 'create', '--account', 'a', '--name', 'n', '--env', 'live', '--residency', 'eu'],
        ...['--privacy-mode', 'off', '--expires-at', 'next tuesday'],
      ],
      message: /'--expires-at <timestamp>' argument 'next tuesday' is invalid. Expected an ISO 8601 timestamp/,
    },
    {
      args: [
        ...['keys', 'create', '--account', 'a', '--name', 'n', '--env', 'live', '--residency', 'eu'],
        ...['--privacy-mode', 'off', '--allowed-models', 'a,,b'],
      ],
      message: /without empty items/,
    },
  ])('gwctl $args', async ({ args, message }) => {
    const run = await gwctl(...args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stdout).toBe('');
    expect(api.requests).toEqual([]);
  });

  it('prints help on stdout and exits 0 when asked', async () => {
    const run = await gwctl('keys', 'create', '--help');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: gwctl keys create \[options\]/);
    expect(run.stdout).toContain('--privacy-mode <mode>');
  });

  it('names both settings when neither the environment nor a stack.env has them', async () => {
    const run = await runCli(['accounts', 'list'], { cwd });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/GW_ADMIN_URL and GW_ADMIN_TOKEN are not set/);
    expect(run.stderr).toContain('.local/stack.env');
  });

  it('refuses a token that cannot be sent in a header without printing it', async () => {
    const run = await runCli(['accounts', 'list'], {
      cwd,
      env: { GW_ADMIN_URL: api.url, GW_ADMIN_TOKEN: 'secret with spaces' },
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/GW_ADMIN_TOKEN contains characters/);
    expect(run.stderr).not.toContain('secret with spaces');
  });
});

describe('accounts', () => {
  it('create --json sends name and plan with the token and prints one JSON object', async () => {
    api.on('POST', '/admin/v1/accounts', { status: 201, body: sampleAccount });
    const run = await gwctl('accounts', 'create', '--name', 'Acme', '--plan', 'pro', '--json');
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout.endsWith('\n')).toBe(true);
    expect(run.stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(run.stdout)).toEqual(sampleAccount);
    expect(api.requests).toEqual([
      {
        method: 'POST',
        url: '/admin/v1/accounts',
        authorization: `Bearer ${token}`,
        contentType: 'application/json',
        body: { name: 'Acme', plan: 'pro' },
      },
    ]);
    expectNoToken(run);
  });

  it('create without --json prints a name/value block', async () => {
    api.on('POST', '/admin/v1/accounts', { status: 201, body: sampleAccount });
    const run = await gwctl('accounts', 'create', '--name', 'Acme', '--plan', 'pro');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('id                   acct_01HZX3QK7T2B\n');
    expect(run.stdout).toContain('plan                 pro\n');
    expect(run.stdout).toContain('requests_per_minute  (plan default)\n');
  });

  it('list prints an aligned table, or {"data":[…]} with --json', async () => {
    const second = { ...sampleAccount, id: 'acct_2', name: 'Globex Corporation', status: 'suspended' };
    api.on('GET', '/admin/v1/accounts', { status: 200, body: { data: [sampleAccount, second] } });
    const table = await gwctl('accounts', 'list');
    expect(table.code).toBe(0);
    expect(table.stdout).toBe(
      [
        'ID                 NAME                PLAN  STATUS     CREATED',
        'acct_01HZX3QK7T2B  Acme                pro   active     2026-11-21T10:00:00.000Z',
        'acct_2             Globex Corporation  pro   suspended  2026-11-21T10:00:00.000Z',
        '',
      ].join('\n'),
    );
    const json = await gwctl('accounts', 'list', '--json');
    expect(JSON.parse(json.stdout)).toEqual({ data: [sampleAccount, second] });
  });

  it('show reports a 404 with its message and request id on stderr and exits 1', async () => {
    api.on(
      'GET',
      '/admin/v1/accounts/acct_missing',
      errorAnswer(404, 'not_found_error', 'account not found', 'req_abc123'),
    );
    const run = await gwctl('accounts', 'show', 'acct_missing');
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe('error: account not found (not_found_error, HTTP 404, request id req_abc123)\n');
  });

  it('encodes the id as one path segment', async () => {
    await gwctl('accounts', 'show', '../keys?x=1');
    expect(api.requests[0]?.url).toBe('/admin/v1/accounts/..%2Fkeys%3Fx%3D1');
  });

  it('suspend and resume print a one-line confirmation', async () => {
    api.on('POST', '/admin/v1/accounts/acct_1/suspend', {
      status: 200,
      body: { ...sampleAccount, id: 'acct_1', status: 'suspended' },
    });
    api.on('POST', '/admin/v1/accounts/acct_1/resume', { status: 200, body: { ...sampleAccount, id: 'acct_1' } });
    const suspended = await gwctl('accounts', 'suspend', 'acct_1');
    expect(suspended).toMatchObject({ code: 0, stdout: 'Suspended account acct_1 (Acme): status suspended\n' });
    const resumed = await gwctl('accounts', 'resume', 'acct_1');
    expect(resumed).toMatchObject({ code: 0, stdout: 'Resumed account acct_1 (Acme): status active\n' });
    expect(api.requests.map((request) => [request.method, request.url, request.body])).toEqual([
      ['POST', '/admin/v1/accounts/acct_1/suspend', undefined],
      ['POST', '/admin/v1/accounts/acct_1/resume', undefined],
    ]);
  });

  it('set-limits sends only the options given, under the API names', async () => {
    api.on('PATCH', '/admin/v1/accounts/acct_1/limits', (request) => ({
      status: 200,
      body: { ...sampleAccount, id: 'acct_1', limits: { ...sampleAccount.limits, ...(request.body as object) } },
    }));
    const run = await gwctl(
      'accounts',
      'set-limits',
      'acct_1',
      '--rpm',
      '120',
      '--overage',
      'off',
      '--ceiling',
      '5000000',
    );
    expect(run.code).toBe(0);
    expect(api.requests[0]?.body).toEqual({ requests_per_minute: 120, overage: false, hard_ceiling_tokens: 5000000 });
    expect(run.stdout).toBe(
      'Updated limits of account acct_1: requests_per_minute=120, overage=off, hard_ceiling_tokens=5000000\n',
    );

    await gwctl('accounts', 'set-limits', 'acct_1', '--concurrency', '4', '--allowance', '1000000', '--overage', 'on');
    expect(api.requests[1]?.body).toEqual({ concurrency: 4, monthly_tokens: 1000000, overage: true });
  });
});

describe('keys', () => {
  const createArgs = ['keys', 'create', '--account', 'acct_1', '--name', 'ci', '--env', 'live', '--residency', 'eu'];

  it('create sends the key fields, lists split and trimmed, the expiry in UTC ISO', async () => {
    api.on('POST', '/admin/v1/keys', { status: 201, body: { ...sampleKey, key: sampleKeyValue } });
    const run = await gwctl(
      ...createArgs,
      ...['--privacy-mode', 'redact', '--allowed-models', ' claude-sonnet-5, claude-haiku-5 '],
      ...['--allowed-ips', '10.0.0.0/8,192.0.2.1', '--expires-at', '2027-01-31T23:30:00+01:00', '--json'],
    );
    expect(run.code).toBe(0);
    expect(api.requests[0]?.body).toEqual({
      account_id: 'acct_1',
      name: 'ci',
      environment: 'live',
      residency: 'eu',
      privacy_mode: 'redact',
      allowed_models: ['claude-sonnet-5', 'claude-haiku-5'],
      allowed_ips: ['10.0.0.0/8', '192.0.2.1'],
      expires_at: '2027-01-31T22:30:00.000Z',
    });
    const printed = JSON.parse(run.stdout) as { id: string; key: string };
    expect(printed.id).toBe(sampleKey.id);
    expect(printed.key).toBe(sampleKeyValue);
  });

  it('create sends null for the lists and expiry not given', async () => {
    api.on('POST', '/admin/v1/keys', { status: 201, body: { ...sampleKey, key: sampleKeyValue } });
    await gwctl(...createArgs, '--privacy-mode', 'off');
    expect(api.requests[0]?.body).toMatchObject({ allowed_models: null, allowed_ips: null, expires_at: null });
  });

  it('create without --json shows the value once and says it will not be shown again', async () => {
    api.on('POST', '/admin/v1/keys', { status: 201, body: { ...sampleKey, key: sampleKeyValue } });
    const run = await gwctl(...createArgs, '--privacy-mode', 'off');
    expect(run.code).toBe(0);
    expect(run.stdout.split(sampleKeyValue)).toHaveLength(2);
    expect(run.stdout).toMatch(/will not be shown again/);
    expect(run.stdout).toContain('display_prefix  gw_live_a1B2\n');
  });

  it('create reports a validation failure naming the field, exit 1', async () => {
    api.on(
      'POST',
      '/admin/v1/keys',
      errorAnswer(400, 'invalid_request_error', 'expires_at: must be in the future', 'req_v1'),
    );
    const run = await gwctl(...createArgs, '--privacy-mode', 'off', '--expires-at', '2001-01-01T00:00:00Z');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('expires_at: must be in the future');
    expect(run.stderr).toContain('req_v1');
  });

  it('create reports a body refused as too large with the envelope message, one line, exit 1', async () => {
    api.on(
      'POST',
      '/admin/v1/keys',
      errorAnswer(413, 'request_too_large', 'The request body is larger than the limit of 1048576 bytes.', 'req_big'),
    );
    const run = await gwctl(...createArgs, '--privacy-mode', 'off');
    expect(run).toMatchObject({
      code: 1,
      stdout: '',
      stderr:
        'error: The request body is larger than the limit of 1048576 bytes. (request_too_large, HTTP 413, request id req_big)\n',
    });
  });

  it('list never prints a key value, even if the server sent one', async () => {
    const used = { ...sampleKey, id: 'key_2', name: 'batch jobs', last_used_at: '2026-11-21T11:00:00.000Z' };
    api.on('GET', '/admin/v1/keys?account_id=acct_1', {
      status: 200,
      body: { data: [{ ...sampleKey, key: sampleKeyValue }, used] },
    });
    const table = await gwctl('keys', 'list', '--account', 'acct_1');
    expect(table.code).toBe(0);
    expect(table.stdout).toBe(
      [
        'ID                NAME        ENV   PREFIX        RESIDENCY  PRIVACY  STATUS  EXPIRES  LAST USED',
        'key_01HZX3R0A1B2  ci          live  gw_live_a1B2  eu         off      active  -        -',
        'key_2             batch jobs  live  gw_live_a1B2  eu         off      active  -        2026-11-21T11:00:00.000Z',
        '',
      ].join('\n'),
    );
    const json = await gwctl('keys', 'list', '--account', 'acct_1', '--json');
    expect(json.code).toBe(0);
    expect(json.stdout).not.toContain(sampleKeyValue);
    expect(json.stdout).not.toContain('"key"');
    expect(JSON.parse(json.stdout)).toEqual({ data: [sampleKey, used] });
  });

  it('list says so when there are no keys', async () => {
    api.on('GET', '/admin/v1/keys?account_id=acct_1', { status: 200, body: { data: [] } });
    expect((await gwctl('keys', 'list', '--account', 'acct_1')).stdout).toBe('No keys.\n');
    expect(JSON.parse((await gwctl('keys', 'list', '--account', 'acct_1', '--json')).stdout)).toEqual({ data: [] });
  });

  it('revoke prints a one-line confirmation', async () => {
    api.on('POST', '/admin/v1/keys/key_1/revoke', {
      status: 200,
      body: { ...sampleKey, id: 'key_1', status: 'revoked', revoked_at: '2026-11-21T12:00:00.000Z' },
    });
    const run = await gwctl('keys', 'revoke', 'key_1');
    expect(run).toMatchObject({ code: 0, stdout: 'Revoked key key_1 (ci, gw_live_a1B2…): status revoked\n' });
  });
});

describe('server failures exit 1', () => {
  it('a wrong token: the server message and request id', async () => {
    api.on('GET', '/admin/v1/accounts', errorAnswer(401, 'authentication_error', 'invalid admin token', 'req_401'));
    const run = await gwctl('accounts', 'list');
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('error: invalid admin token (authentication_error, HTTP 401, request id req_401)\n');
    expectNoToken(run);
  });

  it('a message quoting the token is printed with the token redacted', async () => {
    api.on(
      'GET',
      '/admin/v1/accounts',
      errorAnswer(403, 'permission_error', `token ${token} is not allowed`, 'req_403'),
    );
    const run = await gwctl('accounts', 'list');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('token [redacted] is not allowed');
    expectNoToken(run);
  });

  it('an answer that is not the API envelope: status and request id', async () => {
    api.on('GET', '/admin/v1/accounts', { status: 502, rawBody: '<html>Bad Gateway</html>' });
    const run = await gwctl('accounts', 'list');
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error: HTTP 502 Bad Gateway \(HTTP 502, request id req_fake\d+\)\n$/);
  });

  it('a success status with a body that is not a resource', async () => {
    api.on('GET', '/admin/v1/accounts/acct_1', { status: 200, rawBody: 'ok' });
    const run = await gwctl('accounts', 'show', 'acct_1');
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/unexpected answer from the Admin API \(HTTP 200.*\): the body is not JSON/);
  });

  it('nothing listening: a clear message', async () => {
    const closed = new FakeAdminApi();
    await closed.start();
    const url = closed.url;
    await closed.stop();
    const run = await runCli(['accounts', 'list'], { cwd, env: { GW_ADMIN_URL: url, GW_ADMIN_TOKEN: token } });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`error: cannot reach the Admin API at ${url}/admin/v1/accounts: ECONNREFUSED\n`);
  });

  it('no answer within the timeout', async () => {
    api.on('GET', '/admin/v1/accounts', { status: 200, hang: true });
    const run = await runCli(['accounts', 'list'], {
      cwd,
      env: { GW_ADMIN_URL: api.url, GW_ADMIN_TOKEN: token, GW_ADMIN_TIMEOUT_MS: '300' },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error: the Admin API did not answer within 300 ms/);
  });
});
