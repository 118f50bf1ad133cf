import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

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
    // No function over 100 lines outside tests and generated code: past that, a function holds parts that
    // want names of their own. Tests are exempt (a table of cases may run long).
    files: ['**/*.ts', '**/*.tsx'],
    ignores: ['**/test/**', 'test/**'],
    rules: { 'max-lines-per-function': ['error', { max: 100 }] },
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
