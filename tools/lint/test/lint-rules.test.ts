import { execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

// The lint rules that keep the shared words in @gw/vocabulary (tools/lint/vocabulary-literals.mjs) and the waits of
// tests in @gw/testing, run as `make lint` runs them: the repository's ESLint configuration, on code given as if it
// were a file at a path.

const repoRoot = join(__dirname, '..', '..', '..');
const eslintBin = join(repoRoot, 'node_modules', '.bin', 'eslint');
const ruleId = 'gateway/vocabulary-literals';

interface LintMessage {
  ruleId: string | null;
  line: number;
  message: string;
}

/** ESLint's messages for `code` as the file `path` of the repository. */
function lint(path: string, code: string): Promise<LintMessage[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(eslintBin, ['--format', 'json', '--stdin', '--stdin-filename', path], { cwd: repoRoot });
    let output = '';
    let errors = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0 && code !== 1) reject(new Error(`eslint exited with ${code}: ${errors}`));
      else resolve((JSON.parse(output) as { messages: LintMessage[] }[])[0]!.messages);
    });
    child.stdin.end(code);
  });
}

const vocabularyLines = async (path: string, code: string) =>
  (await lint(path, code)).filter((message) => message.ruleId === ruleId).map((message) => message.line);

// Each line spells a word of the vocabulary out: every one must be reported.
const planted = [
  "export const residency = 'eu';",
  "export type Mode = 'off' | 'flag' | 'redact' | 'tokenise';",
  "export const isTest = (key: { environment: string }) => key.environment === 'test';",
  "export const modes = { off: 'off', flag: 'flag' };",
  "export const tiers = ['uk', 'eu', 'unspecified'];",
  'export const live = `live`;',
  "export function tier(privacyMode: string) { switch (privacyMode) { case 'off': return 0; default: return 1; } }",
].join('\n');

// Each line uses one of the words for something else: none may be reported.
const foreign = [
  "export type Switch = 'on' | 'off';",
  "export const places = ['london', 'manchester', 'uk'];",
  "export const stub = { poolId: 'test-stub', region: 'test' };",
  "export const viewer = (mode: string) => (mode === 'build' || mode === 'off' ? mode : undefined);",
  "export const description = 'privacy mode off';",
].join('\n');

jest.setTimeout(60_000);

it('reports every literal of a shared word planted in a service, line by line', async () => {
  const lines = await vocabularyLines('services/auth/src/planted.ts', planted);
  expect([...new Set(lines)]).toEqual([1, 2, 3, 4, 5, 6, 7]);
});

it('reports them in the dashboard, in TSX too', async () => {
  const tsx = [
    "import { h } from 'preact';",
    'export const Menu = () => (',
    '  <select autocomplete="off">',
    '    <option value="live">live</option>',
    '  </select>',
    ');',
  ].join('\n');
  // The value and the text of the option; autocomplete="off" is HTML's own keyword.
  expect(await vocabularyLines('dashboard/src/planted.tsx', tsx)).toEqual([4, 4]);
});

it('leaves the same words alone where they belong to another list or are ordinary text', async () => {
  expect(await vocabularyLines('tools/gwctl/src/planted.ts', foreign)).toEqual([]);
});

it('leaves the vocabulary package and the tests alone', async () => {
  expect(await vocabularyLines('packages/vocabulary/src/planted.ts', planted)).toEqual([]);
  expect(await vocabularyLines('services/auth/test/planted.test.ts', planted)).toEqual([]);
});

it('cannot be silenced: no source file turns the rule off, by name or with all rules', async () => {
  const { stdout } = await promisify(execFile)('git', ['ls-files', '*.ts', '*.tsx', '*.mjs'], { cwd: repoRoot });
  const files = stdout.split('\n').filter((file) => file !== '' && !file.startsWith('tools/lint/'));
  // A disable comment naming no rule silences them all; one naming this rule (or its plugin) silences it.
  const silencing = /eslint-disable(-next-line|-line)?\s*(\*\/|--|$)|\beslint\b.*\bgateway\//;
  const found: string[] = [];
  for (const file of files) {
    const text = await readFile(join(repoRoot, file), 'utf8');
    text.split('\n').forEach((line, index) => {
      if (silencing.test(line)) found.push(`${file}:${index + 1}`);
    });
  }
  expect(found).toEqual([]);
});

describe('waits in tests', () => {
  const planted = [
    "import { setTimeout as sleep } from 'node:timers/promises';",
    'export async function settle() {',
    '  await new Promise((resolve) => setTimeout(resolve, 100));',
    '  await new Promise<void>((resolve) => setTimeout(() => resolve(), 100));',
    '  await sleep(100);',
    '}',
  ].join('\n');
  const waitLines = async (path: string, code: string) =>
    (await lint(path, code))
      .filter((message) => message.ruleId === 'no-restricted-syntax')
      .map((message) => message.line);

  it('refuses a timer promise or a sleep in a test file: the one helper waits', async () => {
    expect(await waitLines('services/auth/test/planted.test.ts', planted)).toEqual([1, 3, 4, 5]);
    expect(await waitLines('test/e2e/planted.test.ts', planted)).toEqual([1, 3, 4, 5]);
  });

  it('leaves a timer that bounds a race with an event alone', async () => {
    const bound = [
      'export const within = (event: Promise<void>) =>',
      "  Promise.race([event, new Promise((_, reject) => setTimeout(() => reject(new Error('late')), 1_000))]);",
    ].join('\n');
    expect(await waitLines('services/auth/test/planted.test.ts', bound)).toEqual([]);
  });
});
