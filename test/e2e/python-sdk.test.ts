import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '@gw/local-stack';
import { harness } from './harness';
import { admin } from './http';

/**
 * The official Python SDK (`anthropic` from PyPI, pinned in test/python/requirements.txt) against this
 * stack: the pytest suite in test/python, run in a virtual environment that test/python/venv.sh makes
 * once and caches outside the repository.
 */

const h = harness();
const suite = join(repoRoot, 'test', 'python');

interface Finished {
  code: number | null;
  stdout: string;
  /** stdout and stderr, for a failure's message. */
  output: string;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Finished> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd: repoRoot, env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        // Without an exit code the process did not run or was killed (the timeout): the error says which.
        const reason = error && code === null ? `${error.message}\n` : '';
        resolve({ code, stdout, output: `${reason}${stdout}${stderr}` });
      },
    );
  });
}

/** The environment's python; creating it downloads about 10 MB from PyPI the first time. */
async function venvPython(): Promise<string> {
  const made = await run('bash', [join(suite, 'venv.sh')], process.env, 240_000);
  if (made.code !== 0) throw new Error(`test/python/venv.sh failed:\n${made.output}`);
  return made.stdout.trim();
}

async function createKey(accountId: string, environment: 'live' | 'test'): Promise<string> {
  const created = await admin<{ key: string }>(h, 'POST', '/keys', {
    account_id: accountId,
    name: 'python-sdk',
    environment,
    residency: 'eu',
    privacy_mode: 'off',
  });
  expect(created.status).toBe(201);
  return created.body.key;
}

describe('the official Python SDK', () => {
  it('passes the pytest suite of test/python', async () => {
    const python = await venvPython();
    const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'python-sdk', plan: 'pro' });
    expect(account.status).toBe(201);
    // The SDK reads ANTHROPIC_* from the environment; the suite must see only what it is given.
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !name.startsWith('ANTHROPIC_')),
    );
    const env = {
      ...inherited,
      GW_BASE_URL: h.baseUrl,
      GW_ADMIN_URL: h.adminUrl,
      GW_ADMIN_TOKEN: h.adminToken,
      GW_ACCOUNT_ID: account.body.id,
      GW_LIVE_KEY: await createKey(account.body.id, 'live'),
      GW_TEST_KEY: await createKey(account.body.id, 'test'),
      // The simulated upstreams (Anthropic EU, Anthropic UK, OpenAI-compatible EU), for their request logs.
      GW_SIM_URLS: h.simUrls.join(','),
      // Nothing written into the repository: no bytecode, no pytest cache.
      PYTHONDONTWRITEBYTECODE: '1',
    };
    // The report of every test, with its time, in the run's state directory (emptied by the next run).
    const report = join(repoRoot, '.local', 'e2e', 'python-sdk-junit.xml');
    const result = await run(
      python,
      ['-m', 'pytest', '-p', 'no:cacheprovider', '-rfEs', `--junitxml=${report}`, suite],
      env,
      150_000,
    );
    if (result.code !== 0) throw new Error(`pytest exited with ${result.code}:\n${result.output}`);
    // Every test ran: a skipped or deselected test would hide a missing feature.
    const summary = result.output.trim().split('\n').pop()!;
    expect(summary).toMatch(/^=+ \d+ passed(, \d+ warnings?)? in [\d.]+s/);
  }, 420_000);
});
