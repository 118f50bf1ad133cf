import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '@gw/local-stack';

const run = promisify(execFile);

/** Each service, with an environment that is valid except for one variable. */
const cases = [
  { service: 'ingress', env: { HTTP_PORT: 'eighty' }, variable: 'HTTP_PORT' },
  {
    service: 'ingress',
    env: { ADMIN_TOKEN: 'operator-token-of-16+', GATEWAY_CONFIG: 'x', BODY_BUFFER_MAX_BYTES: '1000' },
    variable: 'BODY_BUFFER_MAX_BYTES',
  },
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

/** Each service with an environment that is valid except for its gRPC transport (none is set). */
const withoutTransport: Record<string, Record<string, string>> = {
  ingress: { ADMIN_TOKEN: 'operator-token-of-16+', GATEWAY_CONFIG: 'x' },
  auth: { DATABASE_URL: 'postgres://x', GATEWAY_CONFIG: 'x', KEY_PEPPERS: 'p1:0123456789abcdef' },
  policy: { GATEWAY_CONFIG: 'x' },
  quota: { GATEWAY_CONFIG: 'x', DATABASE_URL: 'postgres://x' },
  router: { GATEWAY_CONFIG: 'x' },
  metering: { DATABASE_URL: 'postgres://x', GATEWAY_CONFIG: 'x' },
};

/** Starts a service with only PATH and env; resolves with how it failed (undefined if it did not). */
function startFailure(service: string, env: Record<string, string | undefined>) {
  return run(process.execPath, [join(repoRoot, `services/${service}/dist/main.js`)], {
    env: { PATH: process.env.PATH ?? '', ...env },
    timeout: 10_000,
  }).then(
    () => undefined,
    (error: { code?: number; stdout: string; stderr: string }) => error,
  );
}

describe('configuration errors', () => {
  it.each(cases)(
    '$service stops with one line naming $variable and exit code 2',
    async ({ service, env, variable }) => {
      const failure = await startFailure(service, env);
      expect(failure).toBeDefined();
      expect(failure!.code).toBe(2);
      const lines = failure!.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^invalid configuration: ${variable}: `));
      expect(failure!.stdout).toBe('');
    },
  );

  it.each(Object.keys(withoutTransport))(
    '%s refuses to start with neither mutual TLS files nor GRPC_INSECURE=true (fail closed)',
    async (service) => {
      const failure = await startFailure(service, withoutTransport[service]!);
      expect(failure?.code).toBe(2);
      expect(failure?.stderr).toBe(
        'invalid configuration: GRPC_TLS_CERT: expected the certificate, key and CA files of mutual TLS ' +
          '(GRPC_TLS_CERT, GRPC_TLS_KEY, GRPC_TLS_CA), or GRPC_INSECURE=true for plaintext gRPC (it is not set)\n',
      );
      expect(failure?.stdout).toBe('');
    },
  );

  it('names a TLS file it cannot read', async () => {
    const failure = await startFailure('auth', {
      ...withoutTransport.auth,
      GRPC_TLS_CERT: '/nonexistent/auth.crt',
      GRPC_TLS_KEY: '/nonexistent/auth.key',
      GRPC_TLS_CA: '/nonexistent/ca.crt',
    });
    expect(failure?.code).toBe(2);
    expect(failure?.stderr).toBe(
      'invalid configuration: GRPC_TLS_CERT: expected a readable file (ENOENT) (got "/nonexistent/auth.crt")\n',
    );
  });

  it('names the path of a typo in the gateway YAML', async () => {
    const failure = await startFailure('policy', {
      GATEWAY_CONFIG: join(repoRoot, 'test/e2e/fixtures/typo.yaml'),
      GRPC_INSECURE: 'true',
    });
    expect(failure?.code).toBe(2);
    expect(failure?.stderr.trim()).toBe(
      'invalid gateway configuration: plans.pro.limits.requestsPerMinute: expected a positive integer',
    );
  });
});
