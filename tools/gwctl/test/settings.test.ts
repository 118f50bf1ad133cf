import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findStackEnv, loadSettings, parseEnvFile } from '../src/settings';
import { emptyDirectory, FakeAdminApi, runCli, sampleAccount } from './fake-admin-api';

let root: string;

beforeEach(() => {
  root = emptyDirectory();
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function writeStackEnv(directory: string, text: string): string {
  mkdirSync(join(directory, '.local'), { recursive: true });
  const path = join(directory, '.local', 'stack.env');
  writeFileSync(path, text);
  return path;
}

describe('parseEnvFile', () => {
  it('reads NAME=value lines, skipping comments and blanks, keeping = in values', () => {
    const text =
      '# written by make up\nGW_ADMIN_URL=http://127.0.0.1:8081\n\nGW_ADMIN_TOKEN=gw_operator_a=b\r\nnot a line\n';
    expect(parseEnvFile(text)).toEqual({ GW_ADMIN_URL: 'http://127.0.0.1:8081', GW_ADMIN_TOKEN: 'gw_operator_a=b' });
  });

  it('removes surrounding quotes and an export prefix', () => {
    expect(parseEnvFile(`export A="x y"\nB='z'\n`)).toEqual({ A: 'x y', B: 'z' });
  });
});

describe('findStackEnv', () => {
  it('finds .local/stack.env in the directory or the nearest parent that has one', () => {
    const outer = writeStackEnv(root, 'A=1\n');
    const nested = join(root, 'a', 'b', 'c');
    mkdirSync(nested, { recursive: true });
    expect(findStackEnv(nested)).toBe(outer);
    const inner = writeStackEnv(join(root, 'a'), 'A=2\n');
    expect(findStackEnv(nested)).toBe(inner);
    expect(findStackEnv(join(root, 'a'))).toBe(inner);
  });

  it('is undefined when no directory up to the root has one', () => {
    expect(findStackEnv(root)).toBeUndefined();
  });
});

describe('loadSettings', () => {
  it('takes the environment without reading any file', () => {
    writeStackEnv(root, 'GW_ADMIN_URL=http://file:1\nGW_ADMIN_TOKEN=from_file\n');
    const loaded = loadSettings({ GW_ADMIN_URL: 'http://env:2/', GW_ADMIN_TOKEN: 'from_env' }, root);
    expect(loaded).toEqual({
      ok: true,
      settings: { adminUrl: 'http://env:2', adminToken: 'from_env', timeoutMs: 10_000, source: undefined },
    });
  });

  it('falls back to stack.env, variable by variable', () => {
    const source = writeStackEnv(root, 'GW_ADMIN_URL=http://file:1\nGW_ADMIN_TOKEN=from_file\n');
    expect(loadSettings({}, root)).toEqual({
      ok: true,
      settings: { adminUrl: 'http://file:1', adminToken: 'from_file', timeoutMs: 10_000, source },
    });
    expect(loadSettings({ GW_ADMIN_TOKEN: 'from_env', GW_ADMIN_URL: '' }, root)).toMatchObject({
      ok: true,
      settings: { adminUrl: 'http://file:1', adminToken: 'from_env' },
    });
  });

  it('names what is missing and where it looked', () => {
    const source = writeStackEnv(root, 'GW_ADMIN_URL=http://file:1\n');
    const loaded = loadSettings({}, root);
    expect(loaded.ok).toBe(false);
    expect(!loaded.ok && loaded.message).toMatch(
      new RegExp(`^GW_ADMIN_TOKEN is not set in the environment nor in ${source}`),
    );
  });

  it('refuses a URL that is not http(s) and a timeout that is not a positive integer', () => {
    expect(loadSettings({ GW_ADMIN_URL: 'ftp://x', GW_ADMIN_TOKEN: 't' }, root)).toMatchObject({ ok: false });
    expect(loadSettings({ GW_ADMIN_URL: 'not a url', GW_ADMIN_TOKEN: 't' }, root)).toMatchObject({ ok: false });
    expect(
      loadSettings({ GW_ADMIN_URL: 'http://x', GW_ADMIN_TOKEN: 't', GW_ADMIN_TIMEOUT_MS: '1.5' }, root),
    ).toMatchObject({ ok: false });
  });
});

describe('the CLI with a stack.env', () => {
  const api = new FakeAdminApi();

  beforeAll(() => api.start());
  afterAll(() => api.stop());

  it('uses the nearest stack.env when the environment has nothing', async () => {
    writeStackEnv(
      root,
      `GW_BASE_URL=http://127.0.0.1:1\nGW_ADMIN_URL=${api.url}\nGW_ADMIN_TOKEN=token_from_stack_env\n`,
    );
    const nested = join(root, 'services', 'auth');
    mkdirSync(nested, { recursive: true });
    api.on('GET', '/admin/v1/accounts', { status: 200, body: { data: [sampleAccount] } });
    const run = await runCli(['accounts', 'list', '--json'], { cwd: nested });
    expect(run.code).toBe(0);
    expect(api.requests.map((request) => request.authorization)).toEqual(['Bearer token_from_stack_env']);

    const overridden = await runCli(['accounts', 'list', '--json'], {
      cwd: nested,
      env: { GW_ADMIN_TOKEN: 'token_from_environment' },
    });
    expect(overridden.code).toBe(0);
    expect(api.requests[1]?.authorization).toBe('Bearer token_from_environment');
  });
});
