import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, credentials, status as GrpcStatus } from '@grpc/grpc-js';
import type { ChannelCredentials, ServiceError } from '@grpc/grpc-js';
import { readGrpcTransport } from '@gw/config';
import type { GrpcTransport } from '@gw/config';
import { ok } from '@gw/errors';
import { create, policyv1 } from '@gw/proto';
import { createTestCertificateAuthority } from '@gw/testing';
import type { CertificateFiles, TestCertificateAuthority } from '@gw/testing';
import { createServiceClient, grpcServiceDefinition, isServing } from '../src';
import type { FinishedCall, RunningGrpcServer } from '../src';
import { loopbackAddress, plaintext, startPolicyServer } from './loopback';

/** The transport a process would read from GRPC_TLS_* naming these files. */
const mutualTls = (ca: CertificateFiles, own: CertificateFiles, serverName?: string): GrpcTransport =>
  readGrpcTransport({
    GRPC_TLS_CERT: own.certFile,
    GRPC_TLS_KEY: own.keyFile,
    GRPC_TLS_CA: ca.certFile,
    ...(serverName !== undefined && { GRPC_TLS_SERVER_NAME: serverName }),
  });

describe('mutual TLS between a client and a server', () => {
  let dir: string;
  let authority: TestCertificateAuthority;
  let client: CertificateFiles;
  /** A certificate authority the server does not trust, and a client certificate it signed. */
  let otherAuthority: TestCertificateAuthority;
  let foreignClient: CertificateFiles;
  let server: RunningGrpcServer;
  let handled = 0;
  const finished: FinishedCall[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'grpc-tls-'));
    authority = await createTestCertificateAuthority(join(dir, 'trusted'), 'gateway test CA');
    otherAuthority = await createTestCertificateAuthority(join(dir, 'other'), 'another CA');
    client = await authority.issue('client');
    foreignClient = await otherAuthority.issue('client');
    server = await startPolicyServer(
      async () => {
        handled += 1;
        return ok({ pools: [{ poolId: 'eu-1', region: 'eu-west' }] });
      },
      {
        transport: mutualTls(authority, await authority.issue('server')),
        observeCall: (call) => finished.push(call),
      },
    );
    server.setServing(true);
  });

  afterAll(async () => {
    await server?.shutdown(1_000);
    await rm(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    handled = 0;
    finished.length = 0;
  });

  const authorizeWith = async (transport: GrpcTransport) => {
    const policy = createServiceClient(policyv1.PolicyService, {
      address: loopbackAddress(server),
      callee: 'policy',
      defaultTimeoutMs: 5_000,
      transport,
    });
    try {
      return await policy.authorize({ model: 'm' });
    } finally {
      policy.close();
    }
  };

  /** A call through grpc-js itself, with credentials our client cannot express (TLS without a certificate). */
  const rawAuthorize = (channelCredentials: ChannelCredentials) => {
    const method = grpcServiceDefinition(policyv1.PolicyService).authorize!;
    const raw = new Client(loopbackAddress(server), channelCredentials);
    return new Promise<ServiceError | null>((resolve) =>
      raw.makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        create(policyv1.AuthorizeRequestSchema, { model: 'm' }),
        { deadline: new Date(Date.now() + 5_000) },
        (error) => {
          raw.close();
          resolve(error);
        },
      ),
    );
  };

  it('serves a client whose certificate the CA signed', async () => {
    const answer = await authorizeWith(mutualTls(authority, client));
    expect(answer.ok && answer.value.pools[0]?.poolId).toBe('eu-1');
    expect(handled).toBe(1);
  });

  it('answers health checks of a client with a certificate, and of no one else', async () => {
    expect(await isServing(loopbackAddress(server), mutualTls(authority, client))).toBe(true);
    expect(await isServing(loopbackAddress(server), mutualTls(authority, foreignClient))).toBe(false);
    expect(await isServing(loopbackAddress(server), plaintext)).toBe(false);
  });

  it('refuses the handshake of a client without a certificate, before any handler', async () => {
    const ca = await readFile(authority.certFile);
    const failure = await rawAuthorize(credentials.createSsl(ca));
    expect(failure?.code).toBe(GrpcStatus.UNAVAILABLE);
    expect(handled).toBe(0);
    expect(finished).toEqual([]);
  });

  it('refuses a client whose certificate another CA signed, before any handler', async () => {
    const answer = await authorizeWith(mutualTls(authority, foreignClient));
    expect(answer).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'overloaded_error', message: expect.stringContaining('policy') }),
    });
    expect(handled).toBe(0);
    expect(finished).toEqual([]);
  });

  it('refuses a plaintext client, before any handler', async () => {
    expect((await rawAuthorize(credentials.createInsecure()))?.code).toBe(GrpcStatus.UNAVAILABLE);
    expect((await authorizeWith(plaintext)).ok).toBe(false);
    expect(handled).toBe(0);
    expect(finished).toEqual([]);
  });

  it('does not call a server whose certificate the CA did not sign', async () => {
    const impostor = await startPolicyServer(
      async () => {
        handled += 1;
        return ok({});
      },
      // The impostor trusts our client's CA, so only the client's check of the server can stop the call.
      { transport: mutualTls(authority, await otherAuthority.issue('impostor')) },
    );
    try {
      const policy = createServiceClient(policyv1.PolicyService, {
        address: loopbackAddress(impostor),
        callee: 'policy',
        defaultTimeoutMs: 5_000,
        transport: mutualTls(authority, client),
      });
      expect((await policy.authorize({ model: 'm' })).ok).toBe(false);
      policy.close();
      expect(handled).toBe(0);
    } finally {
      await impostor.shutdown(1_000);
    }
  });

  it('checks the server certificate against GRPC_TLS_SERVER_NAME when it is set', async () => {
    // The server's certificate names 127.0.0.1 and localhost.
    expect((await authorizeWith(mutualTls(authority, client, 'localhost'))).ok).toBe(true);
    expect((await authorizeWith(mutualTls(authority, client, 'policy.gateway.internal'))).ok).toBe(false);
    expect(handled).toBe(1);
  });
});
