import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { repoRoot } from '@gw/local-stack';
import { harness } from './harness';
import { waitUntil } from '@gw/testing';

const h = harness();
const cli = join(repoRoot, 'tools/gwctl/dist/main.js');
const model = 'claude-sonnet-5';
/** Last use is written at most once a minute, in batches: a little more than that to see it. */
const lastUsedWaitMs = 70_000;

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

interface ListedKey {
  id: string;
  display_prefix: string;
  status: string;
  last_used_at: string | null;
}

/** The compiled CLI as a user runs it, pointed at the test stack and nothing else. */
function gwctl(...args: string[]): Promise<CliRun> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [cli, ...args],
      {
        env: { PATH: process.env.PATH ?? '', GW_ADMIN_URL: h.adminUrl, GW_ADMIN_TOKEN: h.adminToken },
        // Outside the repository, so that no .local/stack.env of a developer's stack could be used.
        cwd: tmpdir(),
        timeout: 20_000,
      },
      (error, stdout, stderr) => {
        done({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

/** Runs a `--json` command that must succeed and returns its one JSON object. */
async function gwctlJson<T>(...args: string[]): Promise<{ value: T; run: CliRun }> {
  const run = await gwctl(...args);
  expect(run).toMatchObject({ code: 0, stderr: '' });
  return { value: JSON.parse(run.stdout) as T, run };
}

function sdk(apiKey: string): Anthropic {
  // authToken: null so that an ANTHROPIC_AUTH_TOKEN in the environment cannot stand in for the key.
  return new Anthropic({ baseURL: h.baseUrl, apiKey, authToken: null, maxRetries: 0 });
}

function sayHello(apiKey: string) {
  return sdk(apiKey).messages.create({
    model,
    max_tokens: 32,
    messages: [{ role: 'user', content: 'hello from gwctl' }],
  });
}

describe('gwctl against the stack', () => {
  let accountId: string;
  let keyId: string;
  let keyValue: string;
  /** Every run after the key's creation, none of which may show its value. */
  const laterRuns: CliRun[] = [];

  it('creates a pro account', async () => {
    const { value: account } = await gwctlJson<{ id: string; plan: string; status: string }>(
      ...['accounts', 'create', '--name', `gwctl e2e ${Date.now()}`, '--plan', 'pro', '--json'],
    );
    expect(account.id).toMatch(/^acct_/);
    expect(account).toMatchObject({ plan: 'pro', status: 'active' });
    accountId = account.id;
  });

  it('creates a live key and prints its value once', async () => {
    const { value: created } = await gwctlJson<ListedKey & { key: string; account_id: string }>(
      ...['keys', 'create', '--account', accountId, '--name', 'gwctl e2e', '--env', 'live'],
      ...['--residency', 'eu', '--privacy-mode', 'off', '--json'],
    );
    expect(created.id).toMatch(/^key_/);
    expect(created.account_id).toBe(accountId);
    expect(created.key).toMatch(/^gw_live_/);
    expect(created.key.startsWith(created.display_prefix)).toBe(true);
    keyId = created.id;
    keyValue = created.key;
  });

  it(
    'the key works with the SDK, and keys list shows its last use but never its value',
    async () => {
      const usedAt = Date.now();
      const message = await sayHello(keyValue);
      expect(message.type).toBe('message');

      const listed = await waitUntil(
        async () => {
          const { value, run } = await gwctlJson<{ data: ListedKey[] }>(
            'keys',
            'list',
            '--account',
            accountId,
            '--json',
          );
          laterRuns.push(run);
          return value.data.find((key) => key.id === keyId);
        },
        { what: "the key's last use in gwctl's list", timeoutMs: lastUsedWaitMs, intervalMs: 2_000 },
        (key) => key?.last_used_at !== null,
      );
      expect(listed).toBeDefined();
      expect(Object.keys(listed!)).not.toContain('key');
      expect(listed!.last_used_at).toEqual(expect.any(String));
      // The use this test made, so within a minute of now: not before it (1 s for rounding), not in the future.
      const lastUsedAt = Date.parse(listed!.last_used_at!);
      expect(lastUsedAt).toBeGreaterThanOrEqual(usedAt - 1_000);
      expect(lastUsedAt).toBeLessThanOrEqual(Date.now() + 1_000);

      const table = await gwctl('keys', 'list', '--account', accountId);
      laterRuns.push(table);
      expect(table.code).toBe(0);
      expect(table.stdout).toContain(keyId);
      expect(table.stdout).toContain(listed!.display_prefix);
    },
    lastUsedWaitMs + 30_000,
  );

  it('revokes the key, after which the SDK gets an authentication error', async () => {
    const revoked = await gwctl('keys', 'revoke', keyId);
    laterRuns.push(revoked);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toMatch(new RegExp(`^Revoked key ${keyId} .*: status revoked\\n$`));

    await expect(sayHello(keyValue)).rejects.toBeInstanceOf(Anthropic.AuthenticationError);

    const { value, run } = await gwctlJson<{ data: ListedKey[] }>('keys', 'list', '--account', accountId, '--json');
    laterRuns.push(run);
    expect(value.data.find((key) => key.id === keyId)?.status).toBe('revoked');
  });

  it('showed the key value in no output but its creation', () => {
    expect(laterRuns.length).toBeGreaterThanOrEqual(4);
    for (const run of laterRuns) {
      expect(run.stdout).not.toContain(keyValue);
      expect(run.stderr).not.toContain(keyValue);
    }
  });
});
