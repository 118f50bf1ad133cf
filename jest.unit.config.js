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
    // The repository's own lint rules, proved on planted code.
    '<rootDir>/test/lint',
  ],
  testMatch: ['**/test/**/*.test.ts'],
  testPathIgnorePatterns: [...base.testPathIgnorePatterns, '\\.int\\.test\\.ts$'],
};
