import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readGrpcTransport } from '@gw/config';
import type { GrpcTransport } from '@gw/config';
import { ok } from '@gw/errors';
import { policyv1 } from '@gw/proto';
import { createTestCertificateAuthority } from '@gw/testing';
import { createServiceClient, isServing } from '../src';
import type { RunningGrpcServer } from '../src';
import { loopbackAddress, plaintext, startPolicyServer } from './loopback';

/**
 * The plaintext health port a server opens beside its mutual-TLS port when GRPC_HEALTH_PORT is set: what
 * the kubelet's gRPC probes (which cannot present a client certificate) are pointed at.
 */
describe('the plaintext health port of a mutual-TLS server', () => {
  let dir: string;
  let transport: GrpcTransport;
  let server: RunningGrpcServer;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'grpc-health-port-'));
    const authority = await createTestCertificateAuthority(dir, 'health port test CA');
    const own = await authority.issue('server');
    // Port 0: any free port; a process reads a fixed one from GRPC_HEALTH_PORT.
    const mutualTls = readGrpcTransport({
      GRPC_TLS_CERT: own.certFile,
      GRPC_TLS_KEY: own.keyFile,
      GRPC_TLS_CA: authority.certFile,
    });
    if (mutualTls.kind !== 'mutualTls') throw new Error('expected a mutual TLS transport');
    transport = { ...mutualTls, healthPort: 0 };
    server = await startPolicyServer(async () => ok({ pools: [] }), { transport });
  });

  afterAll(async () => {
    await server?.shutdown(1_000);
    await rm(dir, { recursive: true, force: true });
  });

  const healthAddress = () => `127.0.0.1:${server.healthPort!}`;

  it('answers plaintext health checks with the server status, as it changes', async () => {
    expect(server.healthPort).toBeGreaterThan(0);
    expect(server.healthPort).not.toBe(server.port);
    expect(await isServing(healthAddress(), plaintext)).toBe(false);
    server.setServing(true);
    expect(await isServing(healthAddress(), plaintext)).toBe(true);
    server.setServing(false);
    expect(await isServing(healthAddress(), plaintext)).toBe(false);
  });

  it('serves nothing but health: the service methods are unimplemented there', async () => {
    const policy = createServiceClient(policyv1.PolicyService, {
      address: healthAddress(),
      callee: 'policy',
      defaultTimeoutMs: 5_000,
      transport: plaintext,
    });
    try {
      const answer = await policy.authorize({ model: 'm' });
      expect(answer.ok).toBe(false);
    } finally {
      policy.close();
    }
  });

  it('leaves the main port mutual TLS only: a plaintext health check there fails', async () => {
    server.setServing(true);
    expect(await isServing(loopbackAddress(server), plaintext)).toBe(false);
  });

  it('closes with the server', async () => {
    const address = healthAddress();
    await server.shutdown(1_000);
    expect(await isServing(address, plaintext)).toBe(false);
  });
});

describe('a plaintext server', () => {
  it('opens no health port: its own port answers the probes', async () => {
    const server = await startPolicyServer(async () => ok({ pools: [] }));
    try {
      expect(server.healthPort).toBeUndefined();
    } finally {
      await server.shutdown(1_000);
    }
  });
});
