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
  ],
  testMatch: ['**/test/**/*.test.ts'],
  testPathIgnorePatterns: [...base.testPathIgnorePatterns, '\\.int\\.test\\.ts$'],
};
