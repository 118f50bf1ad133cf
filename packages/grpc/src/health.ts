import type { GrpcTransport } from '@gw/config';
import { healthv1 } from '@gw/proto';
import { createServiceClient } from './client';

/** Asks a server's grpc.health.v1 whether it serves; false on any failure, a refused handshake included. */
export async function isServing(address: string, transport: GrpcTransport, timeoutMs = 1000): Promise<boolean> {
  const client = createServiceClient(healthv1.Health, {
    address,
    callee: 'health',
    defaultTimeoutMs: timeoutMs,
    transport,
  });
  try {
    const result = await client.check({ service: '' });
    return result.ok && result.value.status === healthv1.HealthCheckResponse_ServingStatus.SERVING;
  } finally {
    client.close();
  }
}
