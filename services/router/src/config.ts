import { z } from 'zod';
import { env, grpcMessageLimitFor, readEnv, readGrpcTransport } from '@gw/config';
import type { GrpcTransport } from '@gw/config';
import { readTracingConfig } from '@gw/telemetry';
import type { TracingConfig } from '@gw/telemetry';

const schema = z.object({
  GRPC_HOST: env.host('127.0.0.1'),
  GRPC_PORT: env.port(50054),
  /** Largest gRPC message received or sent; a request body crosses in one (BODY_LIMIT_BYTES + 1 MiB). */
  GRPC_MAX_MESSAGE_BYTES: env.grpcMaxMessageBytes(),
  /**
   * Test keys' bodies larger than this are read into the stub's answer on worker threads (LARGE_BODY_THREADS
   * of them, shared fairly between accounts), so that one caller's megabytes never stall the event loop.
   */
  LARGE_BODY_INLINE_MAX_BYTES: env.positiveInt(128 * 1024),
  LARGE_BODY_THREADS: env.positiveInt(1),
  /** Large bodies waiting for a thread, per account and in all; past either, 503 with a retry hint. */
  LARGE_BODY_QUEUED_PER_ACCOUNT: env.positiveInt(8),
  LARGE_BODY_QUEUED_TOTAL: env.positiveInt(64),
  /**
   * Bytes of request bodies all calls of this router may hold at once; past it a call is refused with 503.
   * A body costs the router up to about five times its size (the message, the parsed body, the upstream's).
   */
  BODY_BUFFER_MAX_BYTES: env.positiveInt(96 * 1024 * 1024),
  GATEWAY_CONFIG: z
    .string({ error: 'expected the path of the gateway YAML file' })
    .min(1, 'expected the path of the gateway YAML file'),
  METRICS_HOST: env.host('127.0.0.1'),
  METRICS_PORT: env.port(9468),
  LOG_LEVEL: env.logLevel(),
  UPSTREAM_CONNECT_TIMEOUT_MS: env.positiveInt(5_000),
  // A streamed call gets its headers at once; a non-streamed one only after the whole generation,
  // which the SDKs allow 10 minutes for.
  UPSTREAM_STREAM_HEADERS_TIMEOUT_MS: env.positiveInt(60_000),
  UPSTREAM_MESSAGE_TIMEOUT_MS: env.positiveInt(600_000),
  // Upstreams send pings during long silences; this only catches a stream that hung.
  UPSTREAM_BODY_SILENCE_TIMEOUT_MS: env.positiveInt(300_000),
  // Active health checks of every endpoint, and the circuit breaker of each (passive ejection).
  UPSTREAM_HEALTH_INTERVAL_MS: env.positiveInt(10_000),
  UPSTREAM_HEALTH_TIMEOUT_MS: env.positiveInt(2_000),
  UPSTREAM_EJECT_AFTER_FAILURES: env.positiveInt(5),
  UPSTREAM_EJECT_BASE_MS: env.positiveInt(5_000),
  UPSTREAM_EJECT_MAX_MS: env.positiveInt(60_000),
  /**
   * On SIGTERM, how long calls in flight (streams included) may still run before they are cut; the gRPC
   * port takes no new calls and the health service answers NOT_SERVING from the signal on.
   */
  SHUTDOWN_GRACE_MS: env.positiveInt(300_000),
});

const checked = schema
  .refine((config) => config.UPSTREAM_EJECT_MAX_MS >= config.UPSTREAM_EJECT_BASE_MS, {
    message: 'expected at least UPSTREAM_EJECT_BASE_MS',
    path: ['UPSTREAM_EJECT_MAX_MS'],
  })
  // Otherwise a body of the largest size could never be held, and every such call would be refused.
  .refine((config) => grpcMessageLimitFor(config.BODY_BUFFER_MAX_BYTES) >= config.GRPC_MAX_MESSAGE_BYTES, {
    message: 'expected at least the largest body, GRPC_MAX_MESSAGE_BYTES less 1 MiB',
    path: ['BODY_BUFFER_MAX_BYTES'],
  });

export type RouterConfig = z.infer<typeof schema> & {
  /** Of the gRPC server: mutual TLS from GRPC_TLS_*, or plaintext only with GRPC_INSECURE=true. */
  grpcTransport: GrpcTransport;
  /** Tracing from the standard OTEL_* variables; off unless an OTLP endpoint is set. */
  tracing: TracingConfig;
};

export function readRouterConfig(): RouterConfig {
  return { ...readEnv(checked), grpcTransport: readGrpcTransport(), tracing: readTracingConfig(process.env, 'router') };
}
