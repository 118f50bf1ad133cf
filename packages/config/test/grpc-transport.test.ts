import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestCertificateAuthority } from '@gw/testing';
import type { CertificateFiles, TestCertificateAuthority } from '@gw/testing';
import { ConfigError, readGrpcTransport } from '../src';

describe('readGrpcTransport', () => {
  let dir: string;
  let authority: TestCertificateAuthority;
  let own: CertificateFiles;
  let other: CertificateFiles;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'grpc-transport-'));
    authority = await createTestCertificateAuthority(dir, 'config test CA');
    own = await authority.issue('service');
    other = await authority.issue('other');
  });

  afterAll(() => rm(dir, { recursive: true, force: true }));

  const tlsEnv = () => ({ GRPC_TLS_CERT: own.certFile, GRPC_TLS_KEY: own.keyFile, GRPC_TLS_CA: authority.certFile });

  it('refuses to start with neither TLS files nor GRPC_INSECURE=true, in one line', () => {
    const refusal = () => readGrpcTransport({});
    expect(refusal).toThrow(ConfigError);
    expect(refusal).toThrow(
      'invalid configuration: GRPC_TLS_CERT: expected the certificate, key and CA files of mutual TLS ' +
        '(GRPC_TLS_CERT, GRPC_TLS_KEY, GRPC_TLS_CA), or GRPC_INSECURE=true for plaintext gRPC (it is not set)',
    );
    expect(() => readGrpcTransport({ GRPC_INSECURE: 'false' })).toThrow(/^invalid configuration: GRPC_TLS_CERT: /);
    expect(() => readGrpcTransport({ GRPC_INSECURE: 'yes' })).toThrow(
      'invalid configuration: GRPC_INSECURE: expected true or false (got "yes")',
    );
  });

  it('runs plaintext only when GRPC_INSECURE=true says so', () => {
    expect(readGrpcTransport({ GRPC_INSECURE: 'true' })).toEqual({ kind: 'plaintext' });
  });

  it('reads the three PEM files of mutual TLS, and the server name when given', async () => {
    expect(readGrpcTransport(tlsEnv())).toEqual({
      kind: 'mutualTls',
      certificateChain: await readFile(own.certFile),
      privateKey: await readFile(own.keyFile),
      trustedCa: await readFile(authority.certFile),
    });
    expect(readGrpcTransport({ ...tlsEnv(), GRPC_TLS_SERVER_NAME: 'auth.gateway.internal' })).toMatchObject({
      kind: 'mutualTls',
      serverName: 'auth.gateway.internal',
    });
  });

  it('reads the plaintext health port of mutual TLS, refused with plaintext gRPC or out of range', () => {
    expect(readGrpcTransport({ ...tlsEnv(), GRPC_HEALTH_PORT: '8086' })).toMatchObject({
      kind: 'mutualTls',
      healthPort: 8086,
    });
    expect(readGrpcTransport(tlsEnv())).not.toHaveProperty('healthPort', expect.anything());
    expect(() => readGrpcTransport({ GRPC_INSECURE: 'true', GRPC_HEALTH_PORT: '8086' })).toThrow(
      /^invalid configuration: GRPC_HEALTH_PORT: expected unset with GRPC_INSECURE=true/,
    );
    expect(() => readGrpcTransport({ ...tlsEnv(), GRPC_HEALTH_PORT: '70000' })).toThrow(
      /^invalid configuration: GRPC_HEALTH_PORT: expected a port number between 1 and 65535/,
    );
  });

  it('names what is wrong with the TLS settings', async () => {
    const withoutKey = { GRPC_TLS_CERT: own.certFile, GRPC_TLS_CA: authority.certFile };
    expect(() => readGrpcTransport(withoutKey)).toThrow(
      'invalid configuration: GRPC_TLS_KEY: expected a file path: GRPC_TLS_CERT, GRPC_TLS_KEY and GRPC_TLS_CA go together (it is not set)',
    );
    expect(() => readGrpcTransport({ ...tlsEnv(), GRPC_INSECURE: 'true' })).toThrow(
      /^invalid configuration: GRPC_TLS_CERT: expected unset with GRPC_INSECURE=true/,
    );
    expect(() => readGrpcTransport({ GRPC_INSECURE: 'true', GRPC_TLS_SERVER_NAME: 'auth' })).toThrow(
      /^invalid configuration: GRPC_TLS_SERVER_NAME: expected unset with GRPC_INSECURE=true/,
    );
    const missing = join(dir, 'missing.pem');
    expect(() => readGrpcTransport({ ...tlsEnv(), GRPC_TLS_CA: missing })).toThrow(
      `invalid configuration: GRPC_TLS_CA: expected a readable file (ENOENT) (got ${JSON.stringify(missing)})`,
    );
    const notPem = join(dir, 'not.pem');
    await writeFile(notPem, 'not a certificate');
    expect(() => readGrpcTransport({ ...tlsEnv(), GRPC_TLS_CERT: notPem })).toThrow(
      /^invalid configuration: GRPC_TLS_CERT: expected a PEM certificate /,
    );
    expect(() => readGrpcTransport({ ...tlsEnv(), GRPC_TLS_KEY: notPem })).toThrow(
      /^invalid configuration: GRPC_TLS_KEY: expected a PEM private key /,
    );
    expect(() => readGrpcTransport({ ...tlsEnv(), GRPC_TLS_KEY: other.keyFile })).toThrow(
      /^invalid configuration: GRPC_TLS_KEY: expected the private key of the GRPC_TLS_CERT certificate /,
    );
  });
});
