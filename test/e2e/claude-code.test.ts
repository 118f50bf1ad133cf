import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { repoRoot } from '@gw/local-stack';
import type { RecordedRequest } from '@gw/sim-upstream';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin } from './http';

/**
 * The Claude Code CLI from npm (pinned in test/clients/claude-code.sh), in print mode, pointed at the gateway
 * with nothing but ANTHROPIC_BASE_URL and a gateway key, as a team would use it. Its main model and the small
 * fast model of its background calls are catalogue aliases; non-essential traffic is off.
 */

const h = harness();
/**
 * Where an EU key's calls go (deploy/local/gateway.yaml): the main model first to Bedrock in Ireland, the small
 * fast model to the Anthropic API. Through Bedrock, Claude Code's own betas (claude-code-*) are dropped and
 * named, not refused, and its query string (`?beta=true`) is not sent, InvokeModel having none.
 */
const bedrockSim = h.simUrls[4]!;
const anthropicSim = h.simUrls[0]!;

/** What `claude -p --output-format json` prints at the end of a run. */
interface RunResult {
  is_error: boolean;
  result: string;
  num_turns: number;
  usage: {
    input_tokens: number;
    output_tokens: number;
    cache_read_input_tokens: number;
    cache_creation_input_tokens: number;
  };
}

interface Finished {
  code: number | null;
  stdout: string;
  output: string;
}

function run(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<Finished> {
  return new Promise((resolve) => {
    execFile(command, args, { ...options, timeout: 180_000, maxBuffer: 32 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      const reason = error && code === null ? `${error.message}\n` : '';
      resolve({ code, stdout, output: `${reason}${stdout}${stderr}`.slice(-8_000) });
    });
  });
}

let claude: string;
let home: string;
let accountId: string;

beforeAll(async () => {
  const installed = await run('bash', [join(repoRoot, 'test', 'clients', 'claude-code.sh')], {
    cwd: repoRoot,
    env: process.env,
  });
  if (installed.code !== 0) throw new Error(`test/clients/claude-code.sh failed:\n${installed.output}`);
  claude = installed.stdout.trim();
  home = await mkdtemp(join(tmpdir(), 'gw-claude-code-'));
  const account = await admin<{ id: string }>(h, 'POST', '/accounts', { name: 'claude-code', plan: 'pro' });
  expect(account.status).toBe(201);
  accountId = account.body.id;
}, 300_000);

afterAll(() => rm(home, { recursive: true, force: true }));

async function createKey(
  environment: 'live' | 'test',
  privacyMode: 'off' | 'redact',
): Promise<{ id: string; key: string }> {
  const created = await admin<{ id: string; key: string }>(h, 'POST', '/keys', {
    account_id: accountId,
    name: `claude-code-${environment}-${privacyMode}`,
    environment,
    residency: 'eu',
    privacy_mode: privacyMode,
  });
  expect(created.status).toBe(201);
  return created.body;
}

/**
 * One `claude -p` run in a fresh working directory (named `directory`: Claude Code tells the model its working
 * directory in a system message). Only the documented variables are set; the caller's ANTHROPIC_* are not seen.
 */
async function claudeCode(key: string, prompt: string, directory = 'project'): Promise<RunResult> {
  const cwd = join(home, `${Date.now()}-${Math.random().toString(36).slice(2)}`, directory);
  await mkdir(cwd, { recursive: true });
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('ANTHROPIC_')));
  const finished = await run(claude, ['-p', prompt, '--output-format', 'json'], {
    cwd,
    env: {
      ...inherited,
      HOME: home,
      ANTHROPIC_BASE_URL: h.baseUrl,
      ANTHROPIC_API_KEY: key,
      ANTHROPIC_MODEL: 'claude-sonnet-5',
      ANTHROPIC_SMALL_FAST_MODEL: 'claude-haiku-4-5',
      ANTHROPIC_DEFAULT_HAIKU_MODEL: 'claude-haiku-4-5',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
    },
  });
  if (finished.code !== 0) throw new Error(`claude exited with ${finished.code}:\n${finished.output}`);
  const result = JSON.parse(finished.stdout) as RunResult;
  if (result.is_error) throw new Error(`claude reported an error:\n${finished.stdout.slice(0, 4_000)}`);
  return result;
}

/** The model calls both simulators received: Bedrock's InvokeModel ones first, then the Anthropic API's. */
async function simRequests(): Promise<RecordedRequest[]> {
  const logs = await Promise.all(
    [bedrockSim, anthropicSim].map(
      async (url) => (await (await fetch(`${url}/_sim/requests`)).json()) as RecordedRequest[],
    ),
  );
  return logs.flat();
}

const isModelCall = (request: RecordedRequest) =>
  request.path.startsWith('/v1/messages') || /^\/model\/[^/]+\/invoke/.test(request.path);

const clearSim = () =>
  Promise.all([bedrockSim, anthropicSim].map((url) => fetch(`${url}/_sim/requests`, { method: 'DELETE' })));

interface UsageSums {
  requests: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  billable: number;
}

async function usageOfKey(keyId: string): Promise<UsageSums> {
  const client = new Client({ connectionString: h.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<Record<string, string>>(
      `SELECT count(*) AS requests, coalesce(sum(input_tokens), 0) AS input, coalesce(sum(output_tokens), 0) AS output,
              coalesce(sum(cache_read_input_tokens), 0) AS cache_read,
              coalesce(sum(cache_creation_input_tokens), 0) AS cache_write,
              coalesce(sum(billable_tokens), 0) AS billable
         FROM usage_events WHERE key_id = $1`,
      [keyId],
    );
    const row = rows[0]!;
    return {
      requests: Number(row.requests),
      input: Number(row.input),
      output: Number(row.output),
      cacheRead: Number(row.cache_read),
      cacheWrite: Number(row.cache_write),
      billable: Number(row.billable),
    };
  } finally {
    await client.end();
  }
}

/** The usage rows of a key once metering has recorded `requests` of them. */
const recordedUsage = (keyId: string, requests: number) =>
  waitUntil(
    () => usageOfKey(keyId),
    { what: `${requests} usage rows of ${keyId}`, timeoutMs: 30_000 },
    (sums) => sums.requests >= requests,
  );

describe('Claude Code through the gateway', () => {
  it('answers a plain prompt with a test key, from the stub, without touching the upstream', async () => {
    const { key } = await createKey('test', 'off');
    await clearSim();
    const result = await claudeCode(key, 'Say hello.');
    expect(result.result.length).toBeGreaterThan(0);
    expect(await simRequests()).toEqual([]);
  }, 240_000);

  it('makes a tool call and sends its result back, with the stub', async () => {
    const { key } = await createKey('test', 'off');
    // The stub calls the tool the magic text names; Claude Code runs it and sends the result for the answer.
    const result = await claudeCode(key, 'Look at the file. gw-test:tool-use:Read');
    expect(result.num_turns).toBeGreaterThanOrEqual(2);
    expect(result.result.length).toBeGreaterThan(0);
  }, 240_000);

  it('reaches the upstream with a live key: its system message and betas arrive, and its usage is billed exactly', async () => {
    const { id, key } = await createKey('live', 'off');
    await clearSim();
    // The simulated upstream reports these cache reads and writes for each call, as prompt caching would.
    const result = await claudeCode(key, 'Please echo this sentence. sim:cache-read=300 sim:cache-write=40');
    // The simulated upstream echoes the newest user message, which ends with the prompt.
    expect(result.result).toContain('Please echo this sentence.');

    const received = (await simRequests()).filter(isModelCall);
    expect(received.length).toBeGreaterThanOrEqual(1);
    const first = received[0]!;
    expect(first.path).toBe('/model/anthropic.claude-sonnet-5-20250929-v1%3A0/invoke-with-response-stream');
    const body = first.body as { messages: { role: string }[]; thinking?: unknown; anthropic_beta?: string[] };
    // The betas Bedrock supports arrive in the body; Claude Code's own is left out rather than refused.
    expect(body.anthropic_beta).toEqual(expect.arrayContaining(['interleaved-thinking-2025-05-14']));
    expect(body.anthropic_beta).not.toContain('claude-code-20250219');
    expect(body.messages.map((message) => message.role)).toContain('system');
    expect(body.thinking).toBeDefined();

    // What Claude Code was told it used is what the gateway recorded, call for call.
    const usage = await recordedUsage(id, received.length);
    const calls = received.length;
    expect(result.usage.cache_read_input_tokens).toBe(300 * calls);
    expect(usage).toEqual({
      requests: calls,
      input: result.usage.input_tokens,
      output: result.usage.output_tokens,
      cacheRead: result.usage.cache_read_input_tokens,
      cacheWrite: result.usage.cache_creation_input_tokens,
      // Cache reads weighted at 10 %, writes at 125 %, each request rounded up.
      billable: result.usage.input_tokens + result.usage.output_tokens + calls * (30 + 50),
    });
  }, 240_000);

  it('keeps personal data from the upstream with a redact key, in its system message too, and still answers', async () => {
    const { key } = await createKey('live', 'redact');
    await clearSim();
    // The working directory's name reaches the model in Claude Code's system message; the prompt in a user one.
    const result = await claudeCode(
      key,
      'Write to jane.doe@example.com about card 4539 1488 0343 6467.',
      'jane.doe@example.com',
    );
    expect(result.result).toContain('[EMAIL_1]');

    const received = (await simRequests()).filter(isModelCall);
    expect(received.length).toBeGreaterThanOrEqual(1);
    for (const request of received) {
      const sent = JSON.stringify(request.body);
      expect(sent).not.toContain('jane.doe@example.com');
      expect(sent).not.toMatch(/4539\s?1488\s?0343\s?6467/);
      expect((request.body as { messages: { role: string }[] }).messages.map((message) => message.role)).toContain(
        'system',
      );
    }
  }, 240_000);
});
