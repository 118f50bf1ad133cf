import { isSpanContextValid, propagation, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import type { AttributeValue, Context, Span, TextMapGetter } from '@opentelemetry/api';

/** The samplers of the OTEL_TRACES_SAMPLER variable this gateway supports (all of the specification's own). */
const samplerNames = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type SamplerName = (typeof samplerNames)[number];

export type TracingConfig =
  | { enabled: false }
  | {
      enabled: true;
      serviceName: string;
      /** Where spans go: the traces endpoint itself (…/v1/traces over HTTP; the collector's address over gRPC). */
      tracesUrl: string;
      protocol: OtlpProtocol;
      /** OTEL_RESOURCE_ATTRIBUTES, e.g. deployment.environment. */
      resourceAttributes: Record<string, string>;
      sampler: SamplerName;
      /** For the ratio samplers: the share of new traces sampled, 0 to 1. */
      samplerRatio: number;
      /** How long spans wait in the batch before an export (OTEL_BSP_SCHEDULE_DELAY). */
      scheduleDelayMs: number;
      /** Spans held for export at most; more are dropped, never blocking a request (OTEL_BSP_MAX_QUEUE_SIZE). */
      maxQueueSize: number;
    };

const otlpProtocols = ['http/protobuf', 'http/json', 'grpc'] as const;
export type OtlpProtocol = (typeof otlpProtocols)[number];

type Env = Readonly<Record<string, string | undefined>>;

const set = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === '' ? undefined : value.trim();

function positiveInteger(env: Env, name: string, fallback: number): number {
  const text = set(env[name]);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, got "${text}"`);
  return value;
}

/** OTEL_RESOURCE_ATTRIBUTES: key=value pairs separated by commas, values percent-encoded. */
function resourceAttributesOf(text: string | undefined): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    try {
      attributes[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      throw new Error(`OTEL_RESOURCE_ATTRIBUTES holds a value that is not percent-encoded: "${pair}"`);
    }
  }
  return attributes;
}

/**
 * Tracing as the standard OTEL_* variables configure it. Off (nothing started, the API's no-ops) when
 * OTEL_SDK_DISABLED is true, OTEL_TRACES_EXPORTER is none, or no OTLP endpoint is set. The service name
 * is OTEL_SERVICE_NAME, else the process's own name. The protocol is OTLP over HTTP (protobuf, the
 * specification's default, or JSON) or gRPC; a value out of range stops the process rather than
 * tracing nowhere.
 */
export function readTracingConfig(env: Env, defaultServiceName: string): TracingConfig {
  if (set(env.OTEL_SDK_DISABLED)?.toLowerCase() === 'true') return { enabled: false };
  if (set(env.OTEL_TRACES_EXPORTER)?.toLowerCase() === 'none') return { enabled: false };
  const tracesEndpoint = set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const endpoint = set(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  if (tracesEndpoint === undefined && endpoint === undefined) return { enabled: false };
  const protocol = (set(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) ??
    set(env.OTEL_EXPORTER_OTLP_PROTOCOL) ??
    'http/protobuf') as OtlpProtocol;
  if (!otlpProtocols.includes(protocol)) {
    throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL must be one of ${otlpProtocols.join(', ')}, got "${protocol}"`);
  }
  // Over HTTP the general endpoint gets the signal's path; over gRPC the service names the signal.
  const tracesUrl = tracesEndpoint ?? (protocol === 'grpc' ? endpoint! : `${endpoint!.replace(/\/+$/, '')}/v1/traces`);
  if (!/^https?:\/\//.test(tracesUrl)) throw new Error(`the OTLP endpoint must be an http(s) URL, got "${tracesUrl}"`);
  const sampler = (set(env.OTEL_TRACES_SAMPLER) ?? 'parentbased_always_on') as SamplerName;
  if (!samplerNames.includes(sampler)) {
    throw new Error(`OTEL_TRACES_SAMPLER must be one of ${samplerNames.join(', ')}, got "${sampler}"`);
  }
  const ratioText = set(env.OTEL_TRACES_SAMPLER_ARG);
  const samplerRatio = ratioText === undefined ? 1 : Number(ratioText);
  if (!(samplerRatio >= 0 && samplerRatio <= 1)) {
    throw new Error(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got "${ratioText}"`);
  }
  return {
    enabled: true,
    serviceName: set(env.OTEL_SERVICE_NAME) ?? defaultServiceName,
    tracesUrl,
    protocol,
    resourceAttributes: resourceAttributesOf(set(env.OTEL_RESOURCE_ATTRIBUTES)),
    sampler,
    samplerRatio,
    scheduleDelayMs: positiveInteger(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000),
    maxQueueSize: positiveInteger(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048),
  };
}

export interface RunningTracing {
  /** Exports what is still batched, then stops. */
  shutdown(): Promise<void>;
}

let active = false;

/**
 * True once startTracing has started the SDK. While false every helper here returns at once, so that a
 * process with tracing off does no tracing work at all: no spans, no context, no header parsing.
 */
export function tracingActive(): boolean {
  return active;
}

/**
 * Starts the trace SDK when the configuration says so: spans batched (never blocking a request, dropped
 * past the queue's size) and posted over OTLP/HTTP; W3C trace context. No context manager: the API's
 * no-op one stays, and each request's trace context is handed along its call path by the gateway's own
 * code (`traceContext` in the gRPC call options and call contexts), because the SDK's context manager
 * rests on AsyncLocalStorage, which on Node 20 hooks every promise the process makes and, measured,
 * doubled the CPU a request costs. Off: nothing is started and the OpenTelemetry API stays a set of no-ops.
 */
export async function startTracing(config: TracingConfig): Promise<RunningTracing> {
  if (!config.enabled) return { shutdown: () => Promise.resolve() };
  // The SDK and the one exporter configured are loaded only here: a process with tracing off, or on with one
  // protocol, does not hold the others' modules (about 17 MB of each process's memory for all of them).
  const { startTraceSdk } = await import('./trace-sdk.js');
  const provider = await startTraceSdk(config);
  trace.setGlobalTracerProvider(provider);
  active = true;
  return {
    shutdown: async () => {
      await provider.shutdown();
      active = false;
    },
  };
}

/** Longest string a span attribute carries: a value that came from a caller is cut to this. */
export const maxAttributeChars = 128;

/** An attribute value from outside the gateway (a model name, say), cut so that no caller can bloat a span. */
export function boundedAttribute(value: string): string {
  return value.length <= maxAttributeChars ? value : value.slice(0, maxAttributeChars);
}

/** The trace id of a span that is sampled (exported), else undefined: only such a trace can be looked up. */
export function sampledTraceId(span: Span | undefined): string | undefined {
  if (span === undefined) return undefined;
  const spanContext = span.spanContext();
  return spanContext.traceFlags & TraceFlags.SAMPLED ? spanContext.traceId : undefined;
}

/** The trace id of a trace context's span when it is sampled (the exemplar of a request's latencies). */
export function sampledTraceIdOf(traceContext: Context | undefined): string | undefined {
  return traceContext === undefined ? undefined : sampledTraceId(trace.getSpan(traceContext));
}

/** The W3C traceparent of a trace context's span, for a carrier of our own (a multiplexed frame, a usage event). */
export function traceparentOf(traceContext: Context | undefined): string | undefined {
  if (!active || traceContext === undefined || trace.getSpan(traceContext) === undefined) return undefined;
  const carrier: { traceparent?: string } = {};
  propagation.inject(traceContext, carrier);
  return carrier.traceparent;
}

const traceparentGetter: TextMapGetter<string> = {
  keys: () => ['traceparent'],
  get: (carrier, key) => (key === 'traceparent' && carrier !== '' ? carrier : undefined),
};

/** The context a traceparent names (its span as the remote parent); the root context for none or a malformed one. */
export function contextOfTraceparent(traceparent: string | undefined): Context {
  if (!active || traceparent === undefined || traceparent === '') return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, traceparent, traceparentGetter);
}

/** Sets attributes on a trace context's span, if there is one being recorded. */
export function annotateSpan(
  traceContext: Context | undefined,
  attributes: Record<string, AttributeValue | undefined>,
): void {
  if (!active || traceContext === undefined) return;
  const span = trace.getSpan(traceContext);
  if (!span?.isRecording()) return;
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) span.setAttribute(name, value);
}

const noTraceFields = Object.freeze({});

/**
 * The `trace_id` and `span_id` of a trace context's span, for the fields of a log line written on its
 * behalf (none without a valid span), so that a log line can be found from its trace and the other way round.
 */
export function traceLogFields(traceContext: Context | undefined): { trace_id?: string; span_id?: string } {
  if (!active || traceContext === undefined) return noTraceFields;
  const spanContext = trace.getSpan(traceContext)?.spanContext();
  if (spanContext === undefined || !isSpanContextValid(spanContext)) return noTraceFields;
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}

/** Who a log line is written for: a request's id and, while it is traced, its span's context. */
export interface LoggedRequest {
  requestId?: string;
  traceContext?: Context;
}

/** The fields that tie a log line to its request: `request_id`, and `trace_id` and `span_id` while traced. */
export function requestLogFields(request: LoggedRequest): { request_id?: string; trace_id?: string; span_id?: string } {
  return { request_id: request.requestId, ...traceLogFields(request.traceContext) };
}
