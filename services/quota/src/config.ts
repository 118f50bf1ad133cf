import { z } from 'zod';
import { env, readEnv, readGrpcTransport } from '@gw/config';
import type { GrpcTransport } from '@gw/config';
import { readTracingConfig } from '@gw/telemetry';
import type { TracingConfig } from '@gw/telemetry';

const schema = z.object({
  LOG_LEVEL: env.logLevel(),
  GRPC_HOST: env.host('127.0.0.1'),
  GRPC_PORT: env.port(50053),
  /** Largest gRPC message received or sent. */
  GRPC_MAX_MESSAGE_BYTES: env.grpcMaxMessageBytes(),
  METRICS_HOST: env.host('127.0.0.1'),
  METRICS_PORT: env.port(9467),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'expected a redis:// URL')
    .default('redis://127.0.0.1:6379'),
  /** host:port of Redis Cluster seed nodes; when set, REDIS_URL is not used. */
  REDIS_CLUSTER_NODES: env.list(''),
  /** The metered usage, from which a lost allowance counter is rebuilt. */
  DATABASE_URL: z
    .string({ error: 'expected a PostgreSQL URL' })
    .regex(/^postgres(ql)?:\/\//, 'expected a PostgreSQL URL'),
  GATEWAY_CONFIG: z.string({ error: 'expected the path of the gateway YAML file' }).min(1),
  /** A concurrency lease expires this long after its last renewal, so a crashed caller leaks nothing. */
  LEASE_TTL_MS: env.positiveInt(30_000),
});

export type QuotaConfig = z.infer<typeof schema> & {
  /** Of the gRPC server: mutual TLS from GRPC_TLS_*, or plaintext only with GRPC_INSECURE=true. */
  grpcTransport: GrpcTransport;
  /** Tracing from the standard OTEL_* variables; off unless an OTLP endpoint is set. */
  tracing: TracingConfig;
};

export function readQuotaConfig(): QuotaConfig {
  return { ...readEnv(schema), grpcTransport: readGrpcTransport(), tracing: readTracingConfig(process.env, 'quota') };
}
