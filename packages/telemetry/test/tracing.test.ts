import { Writable } from 'node:stream';
import pino from 'pino';
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { loggerOptions } from '../src/logger';
import {
  boundedAttribute,
  contextOfTraceparent,
  maxAttributeChars,
  readTracingConfig,
  startTracing,
  traceLogFields,
  traceparentOf,
  tracingActive,
} from '../src/tracing';
import type { RunningTracing } from '../src/tracing';

describe('readTracingConfig', () => {
  it('is off without an endpoint, when the SDK is disabled, or with no traces exporter', () => {
    expect(readTracingConfig({}, 'ingress')).toEqual({ enabled: false });
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(readTracingConfig({ ...endpoint, OTEL_SDK_DISABLED: 'true' }, 'ingress')).toEqual({ enabled: false });
    expect(readTracingConfig({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }, 'ingress')).toEqual({ enabled: false });
  });

  it('reads the standard variables, with the specification defaults', () => {
    expect(readTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }, 'router')).toEqual({
      enabled: true,
      serviceName: 'router',
      tracesUrl: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      resourceAttributes: {},
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
      scheduleDelayMs: 5000,
      maxQueueSize: 2048,
    });
    expect(
      readTracingConfig(
        {
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
          OTEL_SERVICE_NAME: 'gateway-router',
          OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
          OTEL_TRACES_SAMPLER_ARG: '0.25',
          OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,team=ai%20platform',
          OTEL_BSP_SCHEDULE_DELAY: '200',
        },
        'router',
      ),
    ).toMatchObject({
      serviceName: 'gateway-router',
      tracesUrl: 'http://collector:4317',
      protocol: 'grpc',
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
      resourceAttributes: { 'deployment.environment': 'prod', team: 'ai platform' },
      scheduleDelayMs: 200,
    });
    expect(
      readTracingConfig(
        {
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored:4318',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4318/custom',
        },
        'auth',
      ),
    ).toMatchObject({ tracesUrl: 'http://traces:4318/custom' });
  });

  it('refuses values out of range rather than tracing nowhere', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(() => readTracingConfig({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' }, 'quota')).toThrow(
      /OTEL_EXPORTER_OTLP_PROTOCOL/,
    );
    expect(() => readTracingConfig({ ...endpoint, OTEL_TRACES_SAMPLER: 'sometimes' }, 'quota')).toThrow(
      /OTEL_TRACES_SAMPLER/,
    );
    expect(() => readTracingConfig({ ...endpoint, OTEL_TRACES_SAMPLER_ARG: '2' }, 'quota')).toThrow(
      /OTEL_TRACES_SAMPLER_ARG/,
    );
    expect(() => readTracingConfig({ ...endpoint, OTEL_BSP_SCHEDULE_DELAY: '-1' }, 'quota')).toThrow(
      /OTEL_BSP_SCHEDULE_DELAY/,
    );
    expect(() => readTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'quota')).toThrow(/http/);
  });
});

describe('boundedAttribute', () => {
  it('cuts a caller-supplied value to the cap and leaves a short one alone', () => {
    expect(boundedAttribute('claude-sonnet-5')).toBe('claude-sonnet-5');
    expect(boundedAttribute('m'.repeat(10_000))).toHaveLength(maxAttributeChars);
  });
});

describe('with tracing started', () => {
  const lines: string[] = [];
  const logger = pino(
    loggerOptions('test', 'info'),
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        done();
      },
    }),
  );
  // Spans are made but none sampled, so nothing is exported from the test (the end-to-end test exports).
  let tracing: RunningTracing;
  beforeAll(async () => {
    tracing = await startTracing(
      readTracingConfig(
        { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_TRACES_SAMPLER: 'always_off' },
        'test',
      ),
    );
  });
  afterAll(() => tracing.shutdown());

  it("gives a log line written for a span that span's trace_id and span_id, and none without one", () => {
    expect(tracingActive()).toBe(true);
    const span = trace.getTracer('test').startSpan('work');
    const traceContext = trace.setSpan(ROOT_CONTEXT, span);
    logger.info({ request_id: 'req_1', ...traceLogFields(traceContext) }, 'inside');
    span.end();
    logger.info(traceLogFields(ROOT_CONTEXT), 'no span');
    logger.info(traceLogFields(undefined), 'no context');
    const [inside, noSpan, noContext] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(inside).toMatchObject({
      msg: 'inside',
      request_id: 'req_1',
      trace_id: span.spanContext().traceId,
      span_id: span.spanContext().spanId,
    });
    expect(noSpan).not.toHaveProperty('trace_id');
    expect(noContext).not.toHaveProperty('trace_id');
  });

  it("carries a context's span as a traceparent and reads one back", () => {
    const span = trace.getTracer('test').startSpan('call');
    const traceparent = traceparentOf(trace.setSpan(ROOT_CONTEXT, span));
    span.end();
    expect(traceparent).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-00`);
    expect(trace.getSpanContext(contextOfTraceparent(traceparent))).toMatchObject({
      traceId: span.spanContext().traceId,
      spanId: span.spanContext().spanId,
      isRemote: true,
    });
    expect(trace.getSpanContext(contextOfTraceparent('00-not-a-trace-01'))).toBeUndefined();
    expect(traceparentOf(ROOT_CONTEXT)).toBeUndefined();
    expect(traceparentOf(undefined)).toBeUndefined();
  });
});
