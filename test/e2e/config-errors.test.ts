import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '@gw/local-stack';

const run = promisify(execFile);

/** Each service, with an environment that is valid except for one variable. */
const cases = [
  { service: 'ingress', env: { HTTP_PORT: 'eighty' }, variable: 'HTTP_PORT' },
  {
    service: 'auth',
    env: { DATABASE_URL: 'mysql://x', GATEWAY_CONFIG: 'x', KEY_PEPPERS: 'p1:0123456789abcdef' },
    variable: 'DATABASE_URL',
  },
  { service: 'policy', env: { GATEWAY_CONFIG: 'x', GRPC_PORT: '70000' }, variable: 'GRPC_PORT' },
  { service: 'quota', env: { GATEWAY_CONFIG: 'x', REDIS_URL: 'http://nope' }, variable: 'REDIS_URL' },
  { service: 'router', env: { GATEWAY_CONFIG: 'x', LOG_LEVEL: 'loud' }, variable: 'LOG_LEVEL' },
  {
    service: 'metering',
    env: { DATABASE_URL: 'postgres://x', GATEWAY_CONFIG: 'x', METRICS_PORT: '-1' },
    variable: 'METRICS_PORT',
  },
];

describe('configuration errors', () => {
  it.each(cases)(
    '$service stops with one line naming $variable and exit code 2',
    async ({ service, env, variable }) => {
      const failure = await run(process.execPath, [join(repoRoot, `services/${service}/dist/main.js`)], {
        env: { PATH: process.env.PATH ?? '', ...env },
        timeout: 10_000,
      }).then(
        () => undefined,
        (error: { code?: number; stdout: string; stderr: string }) => error,
      );
      expect(failure).toBeDefined();
      expect(failure!.code).toBe(2);
      const lines = failure!.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^invalid configuration: ${variable}: `));
      expect(failure!.stdout).toBe('');
    },
  );

  it('names the path of a typo in the gateway YAML', async () => {
    const failure = await run(process.execPath, [join(repoRoot, 'services/policy/dist/main.js')], {
      env: { PATH: process.env.PATH ?? '', GATEWAY_CONFIG: join(repoRoot, 'test/e2e/fixtures/typo.yaml') },
      timeout: 10_000,
    }).then(
      () => undefined,
      (error: { code?: number; stderr: string }) => error,
    );
    expect(failure?.code).toBe(2);
    expect(failure?.stderr.trim()).toBe(
      'invalid gateway configuration: plans.pro.limits.requestsPerMinute: expected a positive integer',
    );
  });
});
