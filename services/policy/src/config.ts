import { z } from 'zod';
import { env, readEnv, readGrpcTransport } from '@gw/config';
import type { GrpcTransport } from '@gw/config';
import { readTracingConfig } from '@gw/telemetry';
import type { TracingConfig } from '@gw/telemetry';

const schema = z
  .object({
    LOG_LEVEL: env.logLevel(),
    GRPC_HOST: env.host('127.0.0.1'),
    GRPC_PORT: env.port(50052),
    /** Largest gRPC message received or sent; a request body crosses in one (BODY_LIMIT_BYTES + 1 MiB). */
    GRPC_MAX_MESSAGE_BYTES: env.grpcMaxMessageBytes(),
    METRICS_HOST: env.host('127.0.0.1'),
    METRICS_PORT: env.port(9466),
    GATEWAY_CONFIG: z.string({ error: 'expected the path of the gateway YAML file' }).min(1),
    /** Worker threads of the privacy modes; one account runs on at most half of them, so at least two. */
    PRIVACY_WORKERS: z.coerce
      .number({ error: 'expected an integer from 2 to 64' })
      .int('expected an integer from 2 to 64')
      .min(2, 'expected an integer from 2 to 64')
      .max(64, 'expected an integer from 2 to 64')
      .default(2),
    /** Large bodies of one account that may wait for a worker; more are refused with 503. */
    PRIVACY_QUEUE_PER_ACCOUNT: env.positiveInt(4),
    /** Large bodies that may wait for a worker, all accounts together. */
    PRIVACY_QUEUE_TOTAL: env.positiveInt(32),
  })
  // Otherwise one account could fill the whole queue.
  .refine((config) => config.PRIVACY_QUEUE_PER_ACCOUNT < config.PRIVACY_QUEUE_TOTAL, {
    path: ['PRIVACY_QUEUE_PER_ACCOUNT'],
    message: 'expected fewer than PRIVACY_QUEUE_TOTAL',
  });

export type PolicyConfig = z.infer<typeof schema> & {
  /** Of the gRPC server: mutual TLS from GRPC_TLS_*, or plaintext only with GRPC_INSECURE=true. */
  grpcTransport: GrpcTransport;
  /** Tracing from the standard OTEL_* variables; off unless an OTLP endpoint is set. */
  tracing: TracingConfig;
};

export function readPolicyConfig(): PolicyConfig {
  return { ...readEnv(schema), grpcTransport: readGrpcTransport(), tracing: readTracingConfig(process.env, 'policy') };
}
