import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { collectDefaultMetrics, Registry } from 'prom-client';

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
