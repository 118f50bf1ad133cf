import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

// Services define their own metrics on the registry without depending on prom-client themselves.
export { Counter, Histogram, Gauge } from 'prom-client';
export type { Registry } from 'prom-client';

export interface MetricsServer {
  registry: Registry;
  close(): Promise<void>;
}

/** A registry with the process metrics, served at /metrics for Prometheus. */
export async function startMetricsServer(service: string, host: string, port: number): Promise<MetricsServer> {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  const server: Server = createServer((request, response) => {
    if (request.url === '/metrics') {
      registry.metrics().then(
        (text) => {
          response.writeHead(200, { 'content-type': registry.contentType });
          response.end(text);
        },
        () => {
          response.writeHead(500);
          response.end();
        },
      );
      return;
    }
    response.writeHead(404);
    response.end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    registry,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** What a gRPC server reports of each finished call (the shape of @gw/grpc's FinishedCall). */
export interface GrpcCallRecord {
  service: string;
  method: string;
  code: string;
  durationSeconds: number;
}

/**
 * Request count and latency of a gRPC server, by method and status code: every call that reached
 * the service is counted at its boundary.
 */
export function grpcServerMetrics(registry: Registry): (call: GrpcCallRecord) => void {
  const handled = new Counter({
    name: 'gateway_grpc_server_handled_total',
    help: 'gRPC calls finished by this server, by method and status code.',
    labelNames: ['grpc_service', 'grpc_method', 'grpc_code'],
    registers: [registry],
  });
  const seconds = new Histogram({
    name: 'gateway_grpc_server_handling_seconds',
    help: 'Time from receiving a gRPC call to its status, by method.',
    labelNames: ['grpc_service', 'grpc_method'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30, 120],
    registers: [registry],
  });
  return (call) => {
    handled.inc({ grpc_service: call.service, grpc_method: call.method, grpc_code: call.code });
    seconds.observe({ grpc_service: call.service, grpc_method: call.method }, call.durationSeconds);
  };
}
