import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestCertificateAuthority } from '@gw/testing';
import type { TestCertificateAuthority } from '@gw/testing';
import { kafkaSecurityEnv, readKafkaSecurity } from '../src';

describe('readKafkaSecurity', () => {
  let dir: string;
  let authority: TestCertificateAuthority;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kafka-security-'));
    authority = await createTestCertificateAuthority(dir, 'kafka test CA');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('nothing set: plaintext', () => {
    expect(readKafkaSecurity({})).toEqual({});
    expect(readKafkaSecurity({ KAFKA_TLS: 'false' })).toEqual({});
  });

  it('TLS with the system CAs, or with a CA file read once and a server name', async () => {
    expect(readKafkaSecurity({ KAFKA_TLS: 'true' })).toEqual({ tls: {} });
    const security = readKafkaSecurity({
      KAFKA_TLS: 'true',
      KAFKA_TLS_CA: authority.certFile,
      KAFKA_TLS_SERVER_NAME: 'kafka.internal',
    });
    expect(security.tls).toEqual({ ca: await readFile(authority.certFile), serverName: 'kafka.internal' });
  });

  it.each(['plain', 'scram-sha-256', 'scram-sha-512'] as const)('%s over TLS with a user name and password', (name) => {
    const security = readKafkaSecurity({
      KAFKA_TLS: 'true',
      KAFKA_SASL_MECHANISM: name,
      KAFKA_SASL_USERNAME: 'gateway',
      KAFKA_SASL_PASSWORD: 'secret',
    });
    expect(security.sasl).toEqual({ mechanism: name, username: 'gateway', password: 'secret' });
  });

  it('MSK IAM over TLS with the region of the cluster', () => {
    const security = readKafkaSecurity({
      KAFKA_TLS: 'true',
      KAFKA_SASL_MECHANISM: 'aws-msk-iam',
      KAFKA_AWS_REGION: 'eu-west-2',
    });
    expect(security).toEqual({ tls: {}, sasl: { mechanism: 'aws-msk-iam', region: 'eu-west-2' } });
  });

  it.each([
    [
      { KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' },
      'KAFKA_TLS: expected true with KAFKA_SASL_MECHANISM',
    ],
    [{ KAFKA_TLS: 'true', KAFKA_SASL_MECHANISM: 'scram-sha-256' }, 'KAFKA_SASL_USERNAME: expected a value'],
    [
      { KAFKA_TLS: 'true', KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u' },
      'KAFKA_SASL_PASSWORD: expected a value',
    ],
    [{ KAFKA_TLS: 'true', KAFKA_SASL_MECHANISM: 'aws-msk-iam' }, 'KAFKA_AWS_REGION: expected the AWS region'],
    [{ KAFKA_TLS: 'true', KAFKA_SASL_MECHANISM: 'gssapi' }, 'KAFKA_SASL_MECHANISM: expected plain, scram-sha-256'],
    [{ KAFKA_SASL_USERNAME: 'u' }, 'KAFKA_SASL_USERNAME: expected unset without KAFKA_SASL_MECHANISM'],
    [{ KAFKA_TLS_CA: '/etc/ca.pem' }, 'KAFKA_TLS_CA: expected unset unless KAFKA_TLS=true'],
    [{ KAFKA_TLS: 'true', KAFKA_TLS_CA: '/nonexistent/ca.pem' }, 'KAFKA_TLS_CA: expected a readable file (ENOENT)'],
  ])('%j is refused in one line: %s', (env, message) => {
    expect(() => readKafkaSecurity(env)).toThrow(`invalid configuration: ${message}`);
  });

  it('a CA file that is not a certificate is refused at start', async () => {
    const notPem = join(dir, 'not.pem');
    await writeFile(notPem, 'not a certificate');
    expect(() => readKafkaSecurity({ KAFKA_TLS: 'true', KAFKA_TLS_CA: notPem })).toThrow(
      'invalid configuration: KAFKA_TLS_CA: expected a PEM CA certificate',
    );
  });

  it('kafkaSecurityEnv picks the set variables only', () => {
    expect(kafkaSecurityEnv({ KAFKA_TLS: 'true', KAFKA_SASL_PASSWORD: 'p', PATH: '/bin' })).toEqual({
      KAFKA_TLS: 'true',
      KAFKA_SASL_PASSWORD: 'p',
    });
  });
});
