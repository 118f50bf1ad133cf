const base = require('./jest.base.config');

/** Unit tests: no servers, no network. */
module.exports = {
  ...base,
  roots: [
    '<rootDir>/packages',
    '<rootDir>/services',
    '<rootDir>/bench',
    '<rootDir>/deploy',
    '<rootDir>/tools',
    // The Helm chart's offline tests (helm from deploy/install-helm.sh, no cluster).
    '<rootDir>/test/chart',
    // The one Dockerfile of the six images (static checks; the images stage builds it).
    '<rootDir>/test/images',
    // The dashboard's components, rendered to HTML with preact-render-to-string (no browser: test/e2e has that).
    '<rootDir>/dashboard',
    // The repository's own lint rules, proved on planted code.
    '<rootDir>/test/lint',
  ],
  testMatch: ['**/test/**/*.test.ts', '**/test/**/*.test.tsx'],
  transform: {
    ...base.transform,
    '^.+\\.tsx$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', tsx: true },
          transform: { react: { runtime: 'automatic', importSource: 'preact' } },
          target: 'es2022',
        },
        module: { type: 'commonjs' },
      },
    ],
    // Preact ships ES modules only; Jest runs CommonJS.
    '/node_modules/.*preact.*\\.m?js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!.*preact)'],
  moduleFileExtensions: [...base.moduleFileExtensions, 'tsx', 'mjs'],
  testPathIgnorePatterns: [...base.testPathIgnorePatterns, '\\.int\\.test\\.ts$'],
};
