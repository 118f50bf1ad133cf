import { Counter } from 'prom-client';
import type { Histogram } from 'prom-client';
import {
  grpcServerMetrics,
  histogramWithExemplars,
  observeWithTraceId,
  startMetricsServer,
  wantsOpenMetrics,
} from '../src/metrics';
import type { MetricsServer } from '../src/metrics';

/** Prometheus's own Accept header (2.x, default scrape protocols). */
const prometheusAccept =
  'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';

describe('wantsOpenMetrics', () => {
  it("takes OpenMetrics 1.0 when ranked at least as high as the text format, as Prometheus's header does", () => {
    expect(wantsOpenMetrics(prometheusAccept)).toBe(true);
    expect(wantsOpenMetrics('application/openmetrics-text')).toBe(true);
  });

  it('keeps the text format without a header, for anything else, or when the text format ranks higher', () => {
    expect(wantsOpenMetrics(undefined)).toBe(false);
    expect(wantsOpenMetrics('*/*')).toBe(false);
    expect(wantsOpenMetrics('text/plain;version=0.0.4')).toBe(false);
    expect(wantsOpenMetrics('application/openmetrics-text;version=0.0.1')).toBe(false);
    expect(wantsOpenMetrics('application/openmetrics-text;q=0.4,text/plain;q=0.5')).toBe(false);
    expect(wantsOpenMetrics('application/openmetrics-text;q=0')).toBe(false);
  });
});

describe('the metrics server', () => {
  let server: MetricsServer;
  let latency: Histogram<'route'>;
  let requests: Counter<'route'>;
  beforeEach(async () => {
    server = await startMetricsServer('ingress', '127.0.0.1', 0);
    latency = histogramWithExemplars(
      { name: 'test_latency_seconds', help: 'A latency with exemplars.', labelNames: ['route'], buckets: [0.1, 1] },
      server.registry,
    );
    requests = new Counter({
      name: 'test_requests_total',
      help: 'A counter.',
      labelNames: ['route'],
      registers: [server.registry],
    });
  });
  afterEach(() => server.close());

  const scrape = async (accept?: string) => {
    const response = await fetch(`http://127.0.0.1:${server.port}/metrics`, {
      headers: accept === undefined ? {} : { accept },
    });
    return { contentType: response.headers.get('content-type'), text: await response.text() };
  };

  it("serves a histogram's trace ids as exemplars in OpenMetrics, to a scraper that asks for it", async () => {
    observeWithTraceId(latency, { route: 'messages' }, 0.5, traceId);
    latency.labels({ route: 'messages' }).observe(0.05);
    requests.inc({ route: 'messages' });
    const open = await scrape(prometheusAccept);
    expect(open.contentType).toMatch(/^application\/openmetrics-text; version=1\.0\.0/);
    expect(open.text).toMatch(
      new RegExp(
        `^test_latency_seconds_bucket\\{le="1",service="ingress",route="messages"\\} 2 # \\{trace_id="${traceId}"\\} 0\\.5 \\d+(\\.\\d+)?$`,
        'm',
      ),
    );
    // The bucket whose observation had no trace id has no exemplar.
    expect(open.text).toMatch(/^test_latency_seconds_bucket\{le="0\.1",service="ingress",route="messages"\} 1$/m);
    expect(open.text).toMatch(/^# TYPE test_requests counter$/m);
    expect(open.text).toMatch(/^test_requests_total\{route="messages",service="ingress"\} 1$/m);
    expect(open.text.endsWith('# EOF\n')).toBe(true);
  });

  it('serves the text format otherwise, without exemplars, and an OpenMetrics scrape leaves it as it was', async () => {
    observeWithTraceId(latency, { route: 'messages' }, 0.5, traceId);
    requests.inc({ route: 'messages' });
    const before = await scrape();
    await Promise.all([scrape(prometheusAccept), scrape(prometheusAccept)]);
    const after = await scrape('text/plain;version=0.0.4');
    expect(after.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(after.text).not.toContain('trace_id');
    expect(after.text).toMatch(/^# TYPE test_requests_total counter$/m);
    expect(after.text).toMatch(/^test_requests_total\{route="messages",service="ingress"\} 1$/m);
    // The test's own metrics read the same before and after (the process figures move on their own).
    const own = (text: string) => text.split('\n').filter((line) => /^(# (HELP|TYPE) )?test_/.test(line));
    expect(own(after.text)).toEqual(own(before.text));
    expect(own(after.text).length).toBeGreaterThan(8);
  });

  it("keeps a gRPC call's sampled trace id as the exemplar of its server time", async () => {
    const observe = grpcServerMetrics(server.registry);
    const call = { service: 'gateway.auth.v1.AuthService', method: 'Verify', code: 'OK' };
    observe({ ...call, durationSeconds: 0.003, traceId });
    observe({ ...call, durationSeconds: 0.0002 });
    const open = (await scrape(prometheusAccept)).text;
    const bucket = (le: string) =>
      open.split('\n').find((line) => line.startsWith(`gateway_grpc_server_handling_seconds_bucket{le="${le}"`));
    expect(bucket('0.005')).toContain(`# {trace_id="${traceId}"} 0.003 `);
    expect(bucket('0.0005')).not.toContain('#');
    expect(open).toMatch(/^gateway_grpc_server_handled_total\{[^}]*grpc_code="OK"[^}]*\} 2$/m);
  });
});
