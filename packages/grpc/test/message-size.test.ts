import { ok } from '@gw/errors';
import { policyv1 } from '@gw/proto';
import { createServiceClient } from '../src';
import type { RunningGrpcServer } from '../src';
import { loopbackAddress, plaintext, startPolicyServer } from './loopback';

const MiB = 1024 * 1024;

describe('message size limits', () => {
  let server: RunningGrpcServer;

  beforeAll(async () => {
    // Echoes the body, so that the limit is exercised in both directions on both ends.
    server = await startPolicyServer(async (request) => ok({ bodyJson: request.bodyJson }), {
      maxMessageBytes: 33 * MiB,
    });
  });

  afterAll(() => server.shutdown(1_000));

  it('carries a 20 MiB message both ways when client and server allow 33 MiB', async () => {
    const client = createServiceClient(policyv1.PolicyService, {
      address: loopbackAddress(server),
      callee: 'policy',
      defaultTimeoutMs: 30_000,
      transport: plaintext,
      maxMessageBytes: 33 * MiB,
    });
    const body = Buffer.alloc(20 * MiB, 'a');
    const result = await client.authorize({ model: 'm', bodyJson: body });
    expect(result.ok && result.value.bodyJson?.byteLength).toBe(20 * MiB);
    client.close();
  });

  it('fails a message over the client limit as a value, without sending it', async () => {
    const client = createServiceClient(policyv1.PolicyService, {
      address: loopbackAddress(server),
      callee: 'policy',
      defaultTimeoutMs: 30_000,
      transport: plaintext,
      maxMessageBytes: MiB,
    });
    const result = await client.authorize({ model: 'm', bodyJson: Buffer.alloc(2 * MiB, 'a') });
    expect(result.ok ? 'answered' : result.error.type).toBe('overloaded_error');
    client.close();
  });
});
