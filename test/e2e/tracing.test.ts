import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createKafka, ensureTopics } from '@gw/kafka';
import {
  kafkaConnection,
  portsFromBase,
  processSpecs,
  repoRoot,
  serviceNames,
  startProcess,
  stateDir,
  stopServices,
  waitHealthy,
} from '@gw/local-stack';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin, rawRequest } from './http';
import type { RawResponse } from './http';

const h = harness();
const model = 'claude-sonnet-5';

/**
 * A traced stack of its own beside the shared one (which traces nothing, so that the other tests pay
 * nothing for tracing): the same database and infrastructure, its own ports, topic, consumer group and
 * state, every service exporting OTLP/JSON in short batches to the receiver this test starts.
 */
const ports = portsFromBase(21_200);
const state = stateDir(join(repoRoot, '.local', 'e2e-tracing'));
const usageTopic = 'gateway.usage.v1.e2e-tracing';
const stack = {
  adminUrl: `http://127.0.0.1:${ports.admin}`,
  adminToken: `gw_operator_${randomBytes(24).toString('base64url')}`,
};
const baseUrl = `http://127.0.0.1:${ports.http}`;

async function startTracedStack(): Promise<void> {
  await rm(state.root, { recursive: true, force: true });
  await mkdir(state.root, { recursive: true });
  const kafka = createKafka({
    ...kafkaConnection({ kafkaBrokers: h.replica.kafkaBrokers, kafkaEnv: h.kafkaEnv }),
    clientId: 'e2e-tracing',
    log: () => undefined,
  });
  await ensureTopics(kafka, [{ topic: usageTopic, numPartitions: 1 }]);
  // Not startServices: its migrations are an ES module, which a test file's sandbox cannot import (the
  // global setup migrated the database already).
  const specs = processSpecs({
    repoRoot,
    state,
    ports,
    infra: {
      databaseUrl: h.databaseUrl,
      redisUrl: h.replica.redisUrl,
      kafkaBrokers: h.replica.kafkaBrokers,
      kafkaEnv: h.kafkaEnv,
    },
    secrets: { ADMIN_TOKEN: stack.adminToken, KEY_PEPPERS: `p1:${randomBytes(32).toString('base64url')}` },
    gatewayConfig: h.replica.gatewayConfig,
    usageTopic,
    consumerGroup: 'gateway-metering-e2e-tracing',
    logLevel: 'debug',
    // Requests from 127.0.0.2 play a load balancer; from 127.0.0.1, a client.
    ingressEnv: { TRUSTED_PROXIES: '127.0.0.2/32' },
    grpcTls: h.grpcTls,
    tracingEnv: {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${ports.traces.otlpHttp}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '200',
    },
  });
  for (const spec of specs) await startProcess(state, repoRoot, spec);
  await waitHealthy(state, specs, 90_000);
}

/** A span as OTLP/JSON carries it (ids in hex), with the service that sent it. */
interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
}

interface OtlpAttribute {
  key: string;
  value: Record<string, unknown>;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpAttribute[];
  links?: { traceId: string; spanId: string }[];
}
interface OtlpExport {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: { spans?: OtlpSpan[] }[];
  }[];
}

const attributeMap = (attributes: OtlpAttribute[] | undefined): Record<string, unknown> =>
  Object.fromEntries((attributes ?? []).map(({ key, value }) => [key, Object.values(value)[0]]));

/** An OTLP/HTTP receiver (JSON protocol): every span the stack exports, and every body as it came. */
class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly bodies: string[] = [];
  private server: Server | undefined;

  async listen(port: number): Promise<void> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        this.bodies.push(body);
        const exported = JSON.parse(body) as OtlpExport;
        for (const resourceSpans of exported.resourceSpans ?? []) {
          const service = String(attributeMap(resourceSpans.resource?.attributes)['service.name']);
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              this.spans.push({
                service,
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId || undefined,
                name: span.name,
                kind: span.kind,
                attributes: attributeMap(span.attributes),
                links: span.links ?? [],
              });
            }
          }
        }
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  inTrace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.traceId === traceId);
  }
}

// OpenTelemetry span kinds as OTLP numbers them.
const kind = { server: 2, client: 3, producer: 4, consumer: 5 };

/** A live key of its own (a verification by auth, not ingress's cache) whose privacy mode has policy read the text. */
async function freshKey(): Promise<string> {
  const account = await admin<{ id: string }>(stack, 'POST', '/accounts', { name: 'tracing', plan: 'pro' });
  const key = await admin<{ key: string }>(stack, 'POST', '/keys', {
    account_id: account.body.id,
    name: 'tracing',
    environment: 'live',
    residency: 'eu',
    privacy_mode: 'flag',
  });
  return key.body.key;
}

function sendMessage(
  key: string,
  marker: string,
  stream: boolean,
  options: { traceparent?: string; localAddress?: string } = {},
): Promise<RawResponse> {
  return rawRequest(`${baseUrl}/v1/messages`, {
    headers: {
      'x-api-key': key,
      'anthropic-version': '2023-06-01',
      ...(options.traceparent !== undefined && { traceparent: options.traceparent }),
    },
    body: JSON.stringify({ model, max_tokens: 32, stream, messages: [{ role: 'user', content: `say ${marker}` }] }),
    localAddress: options.localAddress,
  });
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/**
 * Waits for the whole trace of one request, then checks its shape: the ingress server span at the
 * top, a server span of auth, policy, quota and router under it, one upstream attempt under router's,
 * the usage event's producer span under it, and metering's batch span (in a trace of its own) linking
 * to that producer span.
 */
async function requestTrace(receiver: OtlpReceiver, traceId: string, requestId: string) {
  const services = ['ingress', 'auth', 'policy', 'quota', 'router'];
  const spans = await waitUntil<ReceivedSpan[] | undefined>(
    () => {
      const found = receiver.inTrace(traceId);
      const producer = found.find((span) => span.service === 'ingress' && span.kind === kind.producer);
      const linked =
        producer !== undefined &&
        receiver.spans.some(
          (span) =>
            span.service === 'metering' &&
            span.links.some((link) => link.traceId === traceId && link.spanId === producer.spanId),
        );
      return services.every((service) => found.some((span) => span.service === service)) && linked ? found : undefined;
    },
    { what: `every service's spans of trace ${traceId}`, timeoutMs: 30_000, intervalMs: 100 },
  ).then((found) => found!);
  const edge = spans.find((span) => span.service === 'ingress' && span.kind === kind.server)!;
  expect(edge.attributes['gateway.request_id']).toBe(requestId);
  expect(edge.attributes['http.route']).toBe('/v1/messages');
  expect(edge.attributes['http.response.status_code']).toBe(200);
  expect(edge.attributes['gen_ai.request.model']).toBe(model);
  expect(Number(edge.attributes['gen_ai.usage.output_tokens'])).toBeGreaterThan(0);
  // One trace per request: no span of another trace names this request.
  expect(
    receiver.spans.filter((span) => span.attributes['gateway.request_id'] === requestId && span.traceId !== traceId),
  ).toEqual([]);

  const childrenOf = (parent: ReceivedSpan) => spans.filter((span) => span.parentSpanId === parent.spanId);
  for (const service of ['auth', 'policy', 'quota', 'router']) {
    const served = spans.filter((span) => span.service === service && span.kind === kind.server);
    expect(served.length).toBeGreaterThan(0);
    for (const span of served) expect(span.parentSpanId).toBe(edge.spanId);
  }
  const routerSpan = spans.find((span) => span.service === 'router' && span.name.endsWith('/Complete'))!;
  const attempts = childrenOf(routerSpan).filter((span) => span.kind === kind.client);
  expect(attempts).toHaveLength(1);
  expect(attempts[0]!.attributes).toMatchObject({
    'gen_ai.request.model': model,
    'gateway.attempt.outcome': 'accepted',
    'gateway.pool_id': expect.any(String),
    'gateway.region': expect.any(String),
  });
  const producer = spans.find((span) => span.service === 'ingress' && span.kind === kind.producer)!;
  expect(producer.parentSpanId).toBe(edge.spanId);
  const batch = receiver.spans.find(
    (span) => span.service === 'metering' && span.links.some((link) => link.spanId === producer.spanId),
  )!;
  expect(batch.kind).toBe(kind.consumer);
  expect(batch.traceId).not.toBe(traceId);
  return { edge, spans, routerSpan };
}

/** Prometheus's own port beside the traced stack's block of ports (portsFromBase uses base to base + 43). */
const prometheusPort = 21_251;

/**
 * A Prometheus server (Debian's build, deploy/observability/promtool.sh) that scrapes every service of the
 * traced stack each second with exemplar storage on: as any Prometheus does, it asks for OpenMetrics first.
 */
async function startPrometheus(): Promise<{ query<T>(path: string): Promise<T>; stop(): Promise<void> }> {
  const binary = execFileSync('bash', [join(repoRoot, 'deploy', 'observability', 'promtool.sh'), 'prometheus'], {
    encoding: 'utf8',
  }).trim();
  const dir = join(state.root, 'prometheus');
  await mkdir(dir, { recursive: true });
  const targets = Object.values(ports.metrics).map((port) => `127.0.0.1:${port}`);
  const config = {
    global: { scrape_interval: '1s', scrape_timeout: '900ms' },
    scrape_configs: [{ job_name: 'gateway', static_configs: [{ targets }] }],
  };
  await writeFile(join(dir, 'prometheus.yml'), JSON.stringify(config));
  const server: ChildProcess = spawn(
    binary,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${prometheusPort}`,
      '--enable-feature=exemplar-storage',
    ],
    { stdio: 'ignore' },
  );
  const base = `http://127.0.0.1:${prometheusPort}/api/v1/`;
  return {
    async query<T>(path: string): Promise<T> {
      const answer = (await (await fetch(base + path)).json()) as { status: string; data: T };
      if (answer.status !== 'success') throw new Error(`Prometheus answered ${answer.status}`);
      return answer.data;
    },
    async stop() {
      if (server.exitCode !== null) return;
      server.kill('SIGTERM');
      await once(server, 'exit');
    },
  };
}

interface ExemplarSeries {
  seriesLabels: Record<string, string>;
  exemplars: { labels: Record<string, string>; value: string }[];
}

/** The request's log lines of one service (JSON lines carrying its request_id). */
async function logLinesOf(service: string, requestId: string): Promise<Record<string, unknown>[]> {
  const log = await readFile(join(state.logs, `${service}.log`), 'utf8');
  return log
    .split('\n')
    .filter((line) => line.includes(requestId))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.request_id === requestId);
}

describe('tracing', () => {
  const receiver = new OtlpReceiver();
  const marker = `trace-marker-${randomUUID()}`;
  /** The requests traced so far, with the spans their log lines must name. */
  const traced: { requestId: string; traceId: string; edgeSpanId: string; routerSpanId: string }[] = [];

  beforeAll(async () => {
    await receiver.listen(ports.traces.otlpHttp);
    await startTracedStack();
  }, 120_000);
  afterAll(async () => {
    await stopServices({ state }, serviceNames);
    await receiver.close();
  }, 60_000);

  it('a whole answer: one trace across every service, a forged traceparent from a client ignored', async () => {
    const forgedTraceId = hex(16);
    const response = await sendMessage(await freshKey(), marker, false, {
      traceparent: `00-${forgedTraceId}-${hex(8)}-01`,
    });
    expect(response.status).toBe(200);
    const traceId = response.headers['x-trace-id'] as string;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(traceId).not.toBe(forgedTraceId);
    const requestId = response.headers['x-request-id'] as string;
    const { edge, routerSpan } = await requestTrace(receiver, traceId, requestId);
    traced.push({ requestId, traceId, edgeSpanId: edge.spanId, routerSpanId: routerSpan.spanId });
    expect(edge.parentSpanId).toBeUndefined();
    expect(receiver.inTrace(forgedTraceId)).toEqual([]);
  });

  it('a stream: one trace, continuing the traceparent a trusted proxy sent', async () => {
    const proxyTraceId = hex(16);
    const proxySpanId = hex(8);
    const response = await sendMessage(await freshKey(), marker, true, {
      traceparent: `00-${proxyTraceId}-${proxySpanId}-01`,
      localAddress: '127.0.0.2',
    });
    expect(response.status).toBe(200);
    expect(response.body).toContain('message_stop');
    expect(response.headers['x-trace-id']).toBe(proxyTraceId);
    const requestId = response.headers['x-request-id'] as string;
    const { edge, routerSpan } = await requestTrace(receiver, proxyTraceId, requestId);
    traced.push({ requestId, traceId: proxyTraceId, edgeSpanId: edge.spanId, routerSpanId: routerSpan.spanId });
    expect(edge.parentSpanId).toBe(proxySpanId);
    expect(edge.attributes['gateway.streamed']).toBe(true);
  });

  it("Prometheus scrapes every service in OpenMetrics and keeps the traced requests' trace ids as exemplars", async () => {
    const [whole, streamed] = traced;
    expect(streamed).toBeDefined();
    const prometheus = await startPrometheus();
    try {
      // Every target up: each service's OpenMetrics text parsed by Prometheus itself.
      await waitUntil(
        () => prometheus.query<{ result: { value: [number, string] }[] }>('query?query=up'),
        { what: 'every service scraped by Prometheus', timeoutMs: 30_000, intervalMs: 200 },
        (data) => data.result.length === 6 && data.result.every((series) => series.value[1] === '1'),
      );
      const traceIdsOf = async (selector: string) => {
        const range = `start=${Math.floor(Date.now() / 1000) - 600}&end=${Math.ceil(Date.now() / 1000) + 60}`;
        const found = await prometheus.query<ExemplarSeries[]>(
          `query_exemplars?query=${encodeURIComponent(selector)}&${range}`,
        );
        return new Set(found.flatMap((series) => series.exemplars.map((exemplar) => exemplar.labels.trace_id)));
      };
      const exemplarsOf = (selector: string, ...traceIds: string[]) =>
        waitUntil(
          () => traceIdsOf(selector),
          { what: `an exemplar of trace ${traceIds.join(' or ')} on ${selector}`, timeoutMs: 15_000, intervalMs: 200 },
          (found) => traceIds.some((traceId) => found.has(traceId)),
        );
      await exemplarsOf('gateway_http_request_duration_seconds_bucket{streamed="false"}', whole!.traceId);
      await exemplarsOf('gateway_http_request_duration_seconds_bucket{streamed="true"}', streamed!.traceId);
      await exemplarsOf('gateway_added_latency_seconds_bucket{tier="eu"}', whole!.traceId);
      await exemplarsOf('gateway_time_to_first_token_seconds_bucket', streamed!.traceId);
      // Each service's gRPC server time: the latest call in a bucket wins, so either request's trace may be there.
      for (const service of ['auth', 'policy', 'quota', 'router']) {
        const selector = `gateway_grpc_server_handling_seconds_bucket{service="${service}"}`;
        await exemplarsOf(selector, whole!.traceId, streamed!.traceId);
      }
      // The requests are counted by their keys' tier (EU keys).
      const byTier = await prometheus.query<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(
        `query?query=${encodeURIComponent('sum by (tier) (gateway_http_requests_total{route="messages",status="200"})')}`,
      );
      expect(byTier.result.map((series) => series.metric.tier)).toEqual(['eu']);
    } finally {
      await prometheus.stop();
    }
  }, 90_000);

  it('the prompt reaches no span, attribute, event, log line or metric', async () => {
    expect(receiver.bodies.length).toBeGreaterThan(0);
    expect(receiver.bodies.filter((body) => body.includes(marker))).toEqual([]);
    for (const file of await readdir(state.logs)) {
      const log = await readFile(join(state.logs, file), 'utf8');
      expect({ file, hasMarker: log.includes(marker) }).toEqual({ file, hasMarker: false });
    }
    for (const [service, port] of Object.entries(ports.metrics)) {
      const url = `http://127.0.0.1:${port}/metrics`;
      const exposition = await (await fetch(url)).text();
      expect({ service, hasMarker: exposition.includes(marker) }).toEqual({ service, hasMarker: false });
    }
    // Each request's log lines carry its trace and the span they were written for: ingress's request
    // line the edge span, the router's completion line the router's call span.
    expect(traced.length).toBeGreaterThan(0);
    for (const { requestId, traceId, edgeSpanId, routerSpanId } of traced) {
      const ingressLines = await logLinesOf('ingress', requestId);
      expect(ingressLines.length).toBeGreaterThan(0);
      for (const line of ingressLines) expect(line).toMatchObject({ trace_id: traceId, span_id: edgeSpanId });
      const routerLines = (await logLinesOf('router', requestId)).filter((line) => line.msg === 'completion ended');
      expect(routerLines).toHaveLength(1);
      expect(routerLines[0]).toMatchObject({ trace_id: traceId, span_id: routerSpanId });
    }
  });
});
