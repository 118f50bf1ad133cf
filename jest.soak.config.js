/* global process */
const { join } = require('node:path');
const base = require('./jest.base.config');

/**
 * The soak run (`make soak`; never part of `make test`): test/soak on the chaos suite's stack, moved to a state
 * directory and ports of its own so that it can run beside the chaos suite. SOAK_MINUTES (30) sets its length.
 */
process.env.CHAOS_STATE_DIR ??= join(__dirname, '.local', 'soak');
process.env.CHAOS_PORT_BASE ??= '24000';
const minutes = Number(process.env.SOAK_MINUTES ?? 30);

module.exports = {
  ...base,
  roots: ['<rootDir>/test/soak'],
  testMatch: ['<rootDir>/test/soak/**/*.test.ts'],
  testTimeout: (minutes + 15) * 60_000,
  globalSetup: '<rootDir>/test/soak/global-setup.ts',
  globalTeardown: '<rootDir>/test/chaos/global-teardown.ts',
};
