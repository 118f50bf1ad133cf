const base = require('./jest.base.config');

/**
 * Integration and end-to-end tests: real PostgreSQL, Redis and Kafka (started by `make test`) and
 * real service processes (started by the global setup). Run in band: they share the stack.
 */
module.exports = {
  ...base,
  roots: ['<rootDir>/packages', '<rootDir>/services', '<rootDir>/bench', '<rootDir>/deploy', '<rootDir>/test'],
  testMatch: ['**/test/**/*.int.test.ts', '<rootDir>/test/e2e/**/*.test.ts', '<rootDir>/test/fuzz/**/*.test.ts'],
  testTimeout: 60_000,
  globalSetup: '<rootDir>/test/e2e/global-setup.ts',
  globalTeardown: '<rootDir>/test/e2e/global-teardown.ts',
};
