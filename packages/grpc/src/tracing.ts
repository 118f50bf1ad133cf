import { status as GrpcStatus } from '@grpc/grpc-js';
import type { Metadata } from '@grpc/grpc-js';
import type { DescMethod } from '@bufbuild/protobuf';
import { propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Context, Span, TextMapGetter, TextMapSetter } from '@opentelemetry/api';
import { tracingActive } from '@gw/telemetry';

const tracer = trace.getTracer('@gw/grpc');

const metadataSetter: TextMapSetter<Metadata> = {
  set: (metadata, key, value) => metadata.set(key, value),
};

const metadataGetter: TextMapGetter<Metadata> = {
  keys: (metadata) => Object.keys(metadata.getMap()),
  get: (metadata, key) => {
    const values = metadata.get(key).filter((value): value is string => typeof value === 'string');
    return values.length === 0 ? undefined : values;
  },
};

/** Puts a calling span's context into a call's metadata (traceparent, tracestate), when tracing is on. */
export function injectTraceContext(metadata: Metadata, traceContext: Context | undefined): void {
  if (tracingActive() && traceContext !== undefined) propagation.inject(traceContext, metadata, metadataSetter);
}

/** The caller's trace context carried in a call's metadata; the root context when there is none. */
export function traceContextOf(metadata: Metadata): Context {
  return tracingActive() ? propagation.extract(ROOT_CONTEXT, metadata, metadataGetter) : ROOT_CONTEXT;
}

/** A handler's span and the context it runs in: the caller's trace continues in the service. */
export interface ServerCallTrace {
  /** Both undefined while tracing is off. */
  span: Span | undefined;
  context: Context | undefined;
}

/** Starts the server span of one call (named as gRPC names it: `package.Service/Method`) under `parent`. */
export function startServerSpan(method: DescMethod, parent: Context): ServerCallTrace {
  if (!tracingActive()) return { span: undefined, context: undefined };
  const span = tracer.startSpan(
    `${method.parent.typeName}/${method.name}`,
    {
      kind: SpanKind.SERVER,
      attributes: { 'rpc.system': 'grpc', 'rpc.service': method.parent.typeName, 'rpc.method': method.name },
    },
    parent,
  );
  return { span, context: trace.setSpan(parent, span) };
}

// The codes the semantic conventions count as a server's failure; the rest (a refusal such as
// PERMISSION_DENIED or RESOURCE_EXHAUSTED) are answers the service meant to give.
const serverFailures = new Set<number>([
  GrpcStatus.UNKNOWN,
  GrpcStatus.DEADLINE_EXCEEDED,
  GrpcStatus.UNIMPLEMENTED,
  GrpcStatus.INTERNAL,
  GrpcStatus.UNAVAILABLE,
  GrpcStatus.DATA_LOSS,
]);

/** Ends a call's server span with its gRPC status code. */
export function endServerSpan(span: Span | undefined, code: number): void {
  if (span === undefined) return;
  span.setAttribute('rpc.grpc.status_code', code);
  if (serverFailures.has(code)) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
