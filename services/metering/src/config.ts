import { z } from 'zod';
import { env, readEnv, readGrpcTransport, readKafkaSecurity } from '@gw/config';
import type { GrpcTransport, KafkaSecurity } from '@gw/config';
import { readTracingConfig } from '@gw/telemetry';
import type { TracingConfig } from '@gw/telemetry';

const schema = z.object({
  LOG_LEVEL: env.logLevel(),
  /** Serves gateway.metering.v1.MeteringService (GetUsage) and grpc.health.v1. */
  GRPC_HOST: env.host('127.0.0.1'),
  GRPC_PORT: env.port(50055),
  /** Largest gRPC message received or sent. */
  GRPC_MAX_MESSAGE_BYTES: env.grpcMaxMessageBytes(),
  METRICS_HOST: env.host('127.0.0.1'),
  METRICS_PORT: env.port(9469),
  DATABASE_URL: z
    .string({ error: 'expected a PostgreSQL URL' })
    .regex(/^postgres(ql)?:\/\//, 'expected a PostgreSQL URL'),
  KAFKA_BROKERS: env.list('127.0.0.1:9092'),
  USAGE_TOPIC: z.string().min(1).default('gateway.usage.v1'),
  CONSUMER_GROUP: z.string().min(1).default('gateway-metering'),
  /**
   * How long after a consumer stops heartbeating (killed, frozen) the group moves its partitions to
   * the others or to its replacement. The broker refuses values below its group.min.session.timeout.ms.
   */
  CONSUMER_SESSION_TIMEOUT_MS: env.positiveInt(6_000),
  /** The gateway YAML: model and overage prices, read once at start. */
  GATEWAY_CONFIG: z.string({ error: 'expected the path of the gateway YAML file' }).min(1),
  /**
   * host:port pairs of webhook endpoints that may resolve to a private, loopback or link-local address
   * (a receiver inside the operator's network, or the tests' own). Every other such endpoint is refused.
   */
  WEBHOOK_ALLOWED_PRIVATE_TARGETS: env
    .list('')
    .refine((entries) => entries.every((entry) => /^[^\s:/]+:\d{1,5}$|^\[[0-9a-fA-F:.]+\]:\d{1,5}$/.test(entry)), {
      message: 'expected a comma-separated list of host:port',
    }),
  /** A PEM file of certificate authorities trusted for webhook endpoints beside the system's (a private CA). */
  WEBHOOK_CA_FILE: z.string().min(1).optional(),
  /** How often the dispatcher looks for due deliveries. */
  WEBHOOK_POLL_MS: env.positiveInt(1_000),
  /** First retry after this; each next one after twice as long, up to WEBHOOK_RETRY_MAX_MS. */
  WEBHOOK_RETRY_BASE_MS: env.positiveInt(5_000),
  WEBHOOK_RETRY_MAX_MS: env.positiveInt(3_600_000),
  /** A message is retried until this long after it was written (or resent). */
  WEBHOOK_RETRY_WINDOW_MS: env.positiveInt(86_400_000),
  /** One delivery attempt: connection, TLS, and the answer's status line. */
  WEBHOOK_TIMEOUT_MS: env.positiveInt(10_000),
  /** How often the dispatcher looks for keys about to expire (key.expiring). */
  WEBHOOK_KEY_EXPIRY_SCAN_MS: env.positiveInt(60_000),
  /** Deliveries in flight at once. */
  WEBHOOK_CONCURRENCY: env.positiveInt(8),
});

export type MeteringConfig = z.infer<typeof schema> & {
  /** Of the gRPC server: mutual TLS from GRPC_TLS_*, or plaintext only with GRPC_INSECURE=true. */
  grpcTransport: GrpcTransport;
  /** TLS and SASL towards Kafka from KAFKA_TLS* and KAFKA_SASL_*; plaintext when none is set. */
  kafkaSecurity: KafkaSecurity;
  /** Tracing from the standard OTEL_* variables; off unless an OTLP endpoint is set. */
  tracing: TracingConfig;
};

export function readMeteringConfig(): MeteringConfig {
  return {
    ...readEnv(schema),
    grpcTransport: readGrpcTransport(),
    kafkaSecurity: readKafkaSecurity(),
    tracing: readTracingConfig(process.env, 'metering'),
  };
}
