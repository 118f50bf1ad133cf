// Lists, as file:line, every literal of a shared word (tools/lint/vocabulary-literals.mjs) in the given folders,
// whatever the lint configuration exempts: `node tools/lint/vocabulary-report.mjs services/ingress/src`.
// Exits 1 when it finds any.
import { ESLint } from 'eslint';
import { relative } from 'node:path';
import process from 'node:process';
import tseslint from 'typescript-eslint';
import gateway from './vocabulary-literals.mjs';

const folders = process.argv.slice(2);
if (folders.length === 0) {
  process.stderr.write('usage: node tools/lint/vocabulary-report.mjs <folder>...\n');
  process.exit(2);
}
const eslint = new ESLint({
  overrideConfigFile: true,
  overrideConfig: [
    { ignores: ['**/node_modules/**', '**/dist/**'] },
    {
      files: ['**/*.ts', '**/*.tsx'],
      languageOptions: { parser: tseslint.parser },
      plugins: { gateway },
      rules: { 'gateway/vocabulary-literals': 'error' },
    },
  ],
});
const results = await eslint.lintFiles(folders.map((folder) => `${folder}/**/*.{ts,tsx}`));
let found = 0;
for (const result of results) {
  for (const message of result.messages) {
    found += 1;
    process.stdout.write(
      `${relative(process.cwd(), result.filePath)}:${message.line}:${message.column} ${message.message}\n`,
    );
  }
}
process.stdout.write(`${found} literal(s) of the shared vocabulary\n`);
process.exit(found === 0 ? 0 : 1);
