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
    ignores: ['packages/vocabulary/src/**', '**/test/**', 'test/**'],
    plugins: { gateway },
    rules: { 'gateway/vocabulary-literals': 'error' },
  },
  {
    // Tests wait through one helper (waitUntil from @gw/testing) and space out their own traffic with `pace`:
    // no timer promise, no sleep of their own.
    files: ['**/test/**/*.ts', '**/test/**/*.tsx', 'test/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        // A timer that only resolves (`setTimeout(resolve, ms)`): a sleep. A timer that ends a race with an event
        // (`setTimeout(() => reject(new Error(…)), ms)`) is a bound, not a wait.
        {
          selector:
            "NewExpression[callee.name='Promise'] CallExpression[callee.name='setTimeout'][arguments.0.type='Identifier']",
          message: 'Wait with waitUntil from @gw/testing (or space out traffic with pace), not a timer promise.',
        },
        {
          selector:
            "NewExpression[callee.name='Promise'] CallExpression[callee.name='setTimeout'][arguments.0.body.type='CallExpression'][arguments.0.body.arguments.length=0]",
          message: 'Wait with waitUntil from @gw/testing (or space out traffic with pace), not a timer promise.',
        },
        {
          selector: 'CallExpression[callee.name=/^(sleep|delay|wait)$/]',
          message: 'Wait with waitUntil from @gw/testing (or space out traffic with pace), not a sleep.',
        },
        {
          selector: 'ImportDeclaration[source.value=/timers\\/promises$/]',
          message: 'Wait with waitUntil from @gw/testing (or space out traffic with pace), not timers/promises.',
        },
      ],
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
    // The jest configs and the tests' worker scripts are CommonJS scripts run by Node.
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
        Buffer: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
