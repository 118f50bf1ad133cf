const base = require('./jest.base.config');

/**
 * Chaos tests: a stack of their own (own state directory, PostgreSQL, Redis, Kafka and
 * ports) whose infrastructure and services they stop and start while requests run. Run in band,
 * after the integration run; each fault takes up to a few minutes.
 */
module.exports = {
  ...base,
  roots: ['<rootDir>/test/chaos'],
  testMatch: ['<rootDir>/test/chaos/**/*.test.ts'],
  testTimeout: 240_000,
  globalSetup: '<rootDir>/test/chaos/global-setup.ts',
  globalTeardown: '<rootDir>/test/chaos/global-teardown.ts',
};
