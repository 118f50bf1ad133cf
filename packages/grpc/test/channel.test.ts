import { ok } from '@gw/errors';
import { policyv1 } from '@gw/proto';
import { waitUntil } from '@gw/testing';
import { channelOptions, createServiceClient, serverOptions } from '../src';
import type { RunningGrpcServer } from '../src';
import { plaintext, startPolicyServer } from './loopback';

const roundRobin = { loadBalancingConfig: [{ round_robin: {} }] };
const serviceConfig = (address: string) => {
  const config = channelOptions({ address, transport: plaintext })['grpc.service_config'];
  return typeof config === 'string' ? (JSON.parse(config) as unknown) : config;
};

describe('channel options', () => {
  it('spreads calls round robin over every address a dns:/// target resolves to', () => {
    expect(serviceConfig('dns:///policy.gateway.svc.cluster.local:50052')).toEqual(roundRobin);
    expect(serviceConfig('ipv4:10.0.0.1:50052,10.0.0.2:50052')).toEqual(roundRobin);
  });

  it('asks DNS again within a second when a dns:/// target loses an address (not after 30 s)', () => {
    const dns = channelOptions({ address: 'dns:///auth.gateway.svc.cluster.local:50051', transport: plaintext });
    expect(dns['grpc.dns_min_time_between_resolutions_ms']).toBe(1_000);
    expect(channelOptions({ address: '127.0.0.1:50051', transport: plaintext })).not.toHaveProperty(
      'grpc.dns_min_time_between_resolutions_ms',
    );
  });

  it('keeps a plain host:port on one connection (pick first)', () => {
    expect(serviceConfig('127.0.0.1:50052')).toBeUndefined();
    expect(serviceConfig('policy:50052')).toBeUndefined();
  });

  it('limits messages both ways only when told to', () => {
    const limited = channelOptions({ address: 'a:1', maxMessageBytes: 34_603_008, transport: plaintext });
    expect(limited).toMatchObject({
      'grpc.max_receive_message_length': 34_603_008,
      'grpc.max_send_message_length': 34_603_008,
    });
    expect(channelOptions({ address: 'a:1', transport: plaintext })).not.toHaveProperty(
      'grpc.max_receive_message_length',
    );
    expect(serverOptions({ maxMessageBytes: 34_603_008 })).toMatchObject({
      'grpc.max_receive_message_length': 34_603_008,
      'grpc.max_send_message_length': 34_603_008,
    });
  });

  it('keeps connections alive with pings the server accepts', () => {
    const client = channelOptions({ address: 'a:1', transport: plaintext });
    expect(client).toMatchObject({
      'grpc.keepalive_time_ms': 30_000,
      'grpc.keepalive_timeout_ms': 10_000,
      'grpc.keepalive_permit_without_calls': 1,
    });
    const server = serverOptions({});
    expect(server).toMatchObject({ 'grpc.keepalive_permit_without_calls': 1 });
    expect(server['grpc.keepalive_time_ms']).toBeGreaterThan(0);
    expect(server['grpc.keepalive_timeout_ms']).toBeGreaterThan(0);
    // A server that wants pings further apart than the client sends them answers GOAWAY too_many_pings.
    expect(server['grpc.http2.min_ping_interval_without_data_ms']).toBeLessThanOrEqual(
      client['grpc.keepalive_time_ms'] as number,
    );
  });
});

describe('round robin over loopback', () => {
  const servers: RunningGrpcServer[] = [];
  const calls = [0, 0];

  beforeAll(async () => {
    for (const index of [0, 1]) {
      servers.push(
        await startPolicyServer(async () => {
          calls[index]! += 1;
          return ok({});
        }),
      );
    }
  });

  afterAll(() => Promise.all(servers.map((server) => server.shutdown(1_000))));

  it('spreads calls over every address of a multi-address target', async () => {
    const client = createServiceClient(policyv1.PolicyService, {
      address: `ipv4:${servers.map((server) => `127.0.0.1:${server.port}`).join(',')}`,
      callee: 'policy',
      defaultTimeoutMs: 2_000,
      transport: plaintext,
    });
    await waitUntil(
      async () => {
        expect((await client.authorize({ model: 'm' })).ok).toBe(true);
        return calls.every((count) => count > 0);
      },
      { what: 'both servers to be called', timeoutMs: 3_000, intervalMs: 1 },
    );
    client.close();
  });
});
