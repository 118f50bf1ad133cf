import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import type { HistogramConfiguration, LabelValues, Metric, OpenMetricsContentType } from 'prom-client';

// Services define their own metrics on the registry without depending on prom-client themselves.
export { Counter, Histogram, Gauge } from 'prom-client';
export type { Registry } from 'prom-client';

export interface MetricsServer {
  registry: Registry;
  /** The port it listens on (the one asked for, or the one the system chose for 0). */
  port: number;
  close(): Promise<void>;
}

/**
 * A registry with the process metrics, served at /metrics for Prometheus: in the Prometheus text format, or
 * in OpenMetrics, with the histograms' exemplars, when the scraper prefers it (wantsOpenMetrics).
 */
export async function startMetricsServer(service: string, host: string, port: number): Promise<MetricsServer> {
  const registry = new Registry();
  const defaultLabels = { service };
  registry.setDefaultLabels(defaultLabels);
  collectDefaultMetrics({ register: registry });
  const server: Server = createServer((request, response) => {
    if (request.url === '/metrics') {
      const openMetrics = wantsOpenMetrics(request.headers.accept);
      (openMetrics ? openMetricsOf(registry, defaultLabels) : registry.metrics()).then(
        (text) => {
          const contentType = openMetrics ? Registry.OPENMETRICS_CONTENT_TYPE : registry.contentType;
          response.writeHead(200, { 'content-type': contentType });
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
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const openMetricsMediaType = 'application/openmetrics-text';
const textMediaType = 'text/plain';

/**
 * True when an Accept header ranks OpenMetrics 1.0 (or OpenMetrics of no stated version) at least as high as
 * the Prometheus text format, as Prometheus does by default. Anything else gets the text format.
 */
export function wantsOpenMetrics(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  let openMetricsQuality = 0;
  let textQuality = 0;
  for (const range of accept.split(',')) {
    const [mediaType = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    const parameter = (name: string) => parameters.find((part) => part.startsWith(`${name}=`))?.slice(name.length + 1);
    const quality = Number(parameter('q') ?? '1');
    if (!Number.isFinite(quality)) continue;
    const version = parameter('version');
    if (mediaType === openMetricsMediaType && (version === undefined || version === '1.0.0')) {
      openMetricsQuality = Math.max(openMetricsQuality, quality);
    } else if (mediaType === textMediaType) {
      textQuality = Math.max(textQuality, quality);
    }
  }
  return openMetricsQuality > 0 && openMetricsQuality >= textQuality;
}

/**
 * The registry in OpenMetrics. prom-client renders a registry's format as a whole and renames its counters
 * while it renders OpenMetrics, so the text comes from a registry of views of the same metrics
 * (Object.create: reads reach the metric, a rename stays on the view); the Prometheus text of the
 * registry itself is never affected, even by a scrape of each format at once.
 */
async function openMetricsOf(registry: Registry, defaultLabels: Record<string, string>): Promise<string> {
  const view = new Registry<OpenMetricsContentType>();
  view.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  view.setDefaultLabels(defaultLabels);
  // getMetricsAsArray is typed as plain objects; it returns the metrics themselves.
  for (const metric of registry.getMetricsAsArray() as unknown as Metric<string>[]) {
    view.registerMetric(Object.create(metric) as Metric<string>);
  }
  return view.metrics();
}

/** The exemplar label of a trace id (the name OpenMetrics exemplars and Grafana's trace links use). */
export const traceIdExemplarLabel = 'trace_id';

/**
 * A histogram whose observations may carry a trace id (observeWithTraceId), registered on a registry of the
 * text format: prom-client refuses exemplars there when a metric is made, yet renders them only in
 * OpenMetrics, which the metrics server serves from views of the same metrics.
 */
export function histogramWithExemplars<T extends string>(
  configuration: Omit<HistogramConfiguration<T>, 'registers' | 'enableExemplars'>,
  registry: Registry,
): Histogram<T> {
  const histogram = new Histogram<T>({ ...configuration, enableExemplars: true, registers: [] });
  registry.registerMetric(histogram);
  return histogram;
}

/**
 * Observes a value of a histogram made by histogramWithExemplars, keeping the trace id as the exemplar of the
 * bucket it falls in (the latest one there wins). The labels are the histogram's own.
 */
export function observeWithTraceId<T extends string>(
  histogram: Histogram<T>,
  labels: LabelValues<T>,
  value: number,
  traceId: string,
): void {
  // prom-client types exemplar labels with the histogram's own label names; a trace id is none of them.
  const exemplarLabels = { [traceIdExemplarLabel]: traceId } as LabelValues<string> as LabelValues<T>;
  histogram.observe({ labels, value, exemplarLabels });
}

/** What a gRPC server reports of each finished call (the shape of @gw/grpc's FinishedCall). */
export interface GrpcCallRecord {
  service: string;
  method: string;
  code: string;
  durationSeconds: number;
  /** The trace id of the call's server span when sampled: the exemplar of its duration. */
  traceId?: string;
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
  const seconds = histogramWithExemplars(
    {
      name: 'gateway_grpc_server_handling_seconds',
      help: 'Time from receiving a gRPC call to its status, by method.',
      labelNames: ['grpc_service', 'grpc_method'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30, 120],
    },
    registry,
  );
  return (call) => {
    handled.inc({ grpc_service: call.service, grpc_method: call.method, grpc_code: call.code });
    const labels = { grpc_service: call.service, grpc_method: call.method };
    if (call.traceId === undefined) seconds.labels(labels).observe(call.durationSeconds);
    else observeWithTraceId(seconds, labels, call.durationSeconds, call.traceId);
  };
}
