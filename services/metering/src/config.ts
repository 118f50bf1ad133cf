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
