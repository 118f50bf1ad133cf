import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServiceClient, isServing } from '@gw/grpc';
import { stackGrpcTransport } from '@gw/local-stack';
import type { StackTls } from '@gw/local-stack';
import { authv1 } from '@gw/proto';
import { createTestCertificateAuthority } from '@gw/testing';
import { harness } from './harness';

const h = harness();
const services = {
  auth: h.authAddress,
  policy: h.replica.policyAddress,
  quota: h.replica.quotaAddress,
  router: h.replica.routerAddress,
  metering: h.replica.meteringAddress,
};
const plaintext = { kind: 'plaintext' } as const;

describe('the stack talks mutual TLS between its services', () => {
  let dir: string;
  /** The stack's CA to check the servers, but a certificate another CA signed. */
  let foreign: StackTls;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'e2e-foreign-ca-'));
    const otherAuthority = await createTestCertificateAuthority(dir, 'another CA');
    foreign = { caFile: h.grpcTls.caFile, ...(await otherAuthority.issue('intruder')) };
  });

  afterAll(() => rm(dir, { recursive: true, force: true }));

  it.each(Object.entries(services))(
    '%s answers health checks of a caller with the stack certificate, and of no one else',
    async (_name, address) => {
      expect(await isServing(address, stackGrpcTransport(h.grpcTls))).toBe(true);
      expect(await isServing(address, plaintext)).toBe(false);
      expect(await isServing(address, stackGrpcTransport(foreign))).toBe(false);
    },
  );

  it('keeps ListAccounts and VerifyKey from a caller without a certificate of the stack CA', async () => {
    const authWith = (transport: ReturnType<typeof stackGrpcTransport>) =>
      createServiceClient(authv1.AuthService, {
        address: h.authAddress,
        callee: 'auth',
        defaultTimeoutMs: 5_000,
        transport,
      });
    for (const transport of [plaintext, stackGrpcTransport(foreign)]) {
      const auth = authWith(transport);
      try {
        const accounts = await auth.listAccounts({});
        expect(accounts).toEqual({ ok: false, error: expect.objectContaining({ type: 'overloaded_error' }) });
        const verified = await auth.verifyKey({ key: h.testKey, sourceAddress: '127.0.0.1' });
        expect(verified.ok).toBe(false);
      } finally {
        auth.close();
      }
    }
    const auth = authWith(stackGrpcTransport(h.grpcTls));
    try {
      const accounts = await auth.listAccounts({ accountId: h.accountId });
      expect(accounts.ok && accounts.value.accounts.map((account) => account.id)).toEqual([h.accountId]);
    } finally {
      auth.close();
    }
  });
});
