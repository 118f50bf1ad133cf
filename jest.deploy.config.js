const base = require('./jest.base.config');

/**
 * Deployment tests, each a stage of `make test` of its own: the chart installed into a Kubernetes
 * control plane on loopback (test/deploy/cluster.test.ts), and the built images run with podman
 * against the tests' infrastructure (test/deploy/images-run.test.ts). Each starts and cleans up what
 * it needs. Run in band.
 */
module.exports = {
  ...base,
  roots: ['<rootDir>/test/deploy'],
  testMatch: ['<rootDir>/test/deploy/**/*.test.ts'],
  testTimeout: 300_000,
};
