import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const repoRoot = join(__dirname, '..', '..', '..');

/** NAME=value lines, as `deploy/local/infra.sh up` writes infra.env. */
export function parseEnvFile(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split('\n')
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

/**
 * The test infrastructure's settings (DATABASE_URL, REDIS_URL, KAFKA_BROKERS and Kafka's KAFKA_TLS* and
 * KAFKA_SASL_*): the process's environment when it names the brokers (`make test` sources infra.env), else the
 * first infra.env that `infra.sh up` wrote (GW_STATE_DIR's, the tests', `make up`'s).
 */
export function testInfraEnv(): Record<string, string> {
  if (process.env.KAFKA_BROKERS) {
    return Object.fromEntries(
      Object.entries(process.env).flatMap(([name, value]) => (value === undefined ? [] : [[name, value]])),
    );
  }
  const candidates = [
    process.env.GW_STATE_DIR && join(process.env.GW_STATE_DIR, 'infra.env'),
    join(repoRoot, '.local', 'test-infra', 'infra.env'),
    join(repoRoot, '.local', 'infra.env'),
  ];
  const file = candidates.find((candidate): candidate is string => Boolean(candidate) && existsSync(candidate!));
  if (!file) throw new Error('KAFKA_BROKERS is not set and no infra.env was found: run deploy/local/infra.sh up');
  return parseEnvFile(readFileSync(file, 'utf8'));
}
