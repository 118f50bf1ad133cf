import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import gateway from './tools/lint/vocabulary-literals.mjs';

export default tseslint.config(
  {
    ignores: ['**/node_modules/**', '**/dist/**', 'packages/proto/src/gen/**', '.local/**', '.cache/**', 'coverage/**'],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    // The shared words are written once, in @gw/vocabulary (tools/lint/vocabulary-literals.mjs); tests may spell
    // them out, as a caller would.
    files: ['**/*.ts', '**/*.tsx'],
    ignores: [
      'packages/vocabulary/src/**',
      '**/test/**',
      'test/**',
      // TODO: ingress still spells the words out; `node tools/lint/vocabulary-report.mjs` lists where. Once it uses
      // @gw/vocabulary, delete this line.
      'services/ingress/src/**',
    ],
    plugins: { gateway },
    rules: { 'gateway/vocabulary-literals': 'error' },
  },
  {
    // The jest configs are CommonJS scripts.
    files: ['**/*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', module: 'writable', __dirname: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
