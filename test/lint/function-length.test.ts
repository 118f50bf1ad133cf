import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';

/** The repository's own lint configuration (eslint.config.mjs), as `make lint` runs it. */
const repoRoot = join(__dirname, '../..');

/** A function of `lines` lines in all, its signature and closing brace included. */
function functionOf(lines: number): string {
  const body = Array.from({ length: lines - 4 }, (_, index) => `  total += ${index};`);
  return ['export function planted(): number {', '  let total = 0;', ...body, '  return total;', '}', ''].join('\n');
}

const eslintBin = join(dirname(require.resolve('eslint/package.json')), 'bin/eslint.js');

/** ESLint in its own process (its config is an ES module), on code given as the file at `filePath`. */
function lengthErrors(code: string, filePath: string): string[] {
  const run = spawnSync(process.execPath, [eslintBin, '--stdin', '--stdin-filename', filePath, '--format', 'json'], {
    cwd: repoRoot,
    input: code,
    encoding: 'utf8',
  });
  const [result] = JSON.parse(run.stdout) as { messages: { ruleId: string | null; message: string }[] }[];
  return (result?.messages ?? [])
    .filter((message) => message.ruleId === 'max-lines-per-function')
    .map((message) => message.message);
}

describe('no function over 100 lines outside tests', () => {
  jest.setTimeout(60_000);

  it('fails a function of 101 lines planted in a service or the dashboard', () => {
    for (const path of ['services/ingress/src/planted.ts', 'dashboard/src/planted.tsx']) {
      expect(lengthErrors(functionOf(101), path)).toEqual([
        expect.stringContaining('has too many lines (101). Maximum allowed is 100'),
      ]);
    }
  });

  it('passes a function of 100 lines', () => {
    expect(lengthErrors(functionOf(100), 'services/ingress/src/planted.ts')).toEqual([]);
  });

  it('leaves tests alone', () => {
    expect(lengthErrors(functionOf(150), 'services/ingress/test/planted.test.ts')).toEqual([]);
    expect(lengthErrors(functionOf(150), 'test/e2e/planted.test.ts')).toEqual([]);
  });
});
