import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { Sampler, SpanExporter } from '@opentelemetry/sdk-trace';
import type { OtlpProtocol, SamplerName, TracingConfig } from './tracing';

function samplerOf(name: SamplerName, ratio: number): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}

/** The configured protocol's exporter, its module loaded only now. */
async function exporterOf(protocol: OtlpProtocol, url: string): Promise<SpanExporter> {
  switch (protocol) {
    case 'http/json':
      return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter({ url });
    case 'grpc':
      return new (await import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter({ url });
    case 'http/protobuf':
      return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter({ url });
  }
}

/** The trace SDK as `config` describes it, with W3C trace context as the process's propagator. */
export async function startTraceSdk(config: Extract<TracingConfig, { enabled: true }>): Promise<TracerProvider> {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ ...config.resourceAttributes, 'service.name': config.serviceName }),
    sampler: samplerOf(config.sampler, config.samplerRatio),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: await exporterOf(config.protocol, config.tracesUrl),
        scheduledDelayMillis: config.scheduleDelayMs,
        maxQueueSize: config.maxQueueSize,
        maxExportBatchSize: Math.min(512, config.maxQueueSize),
      }),
    ],
  });
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  return provider;
}
