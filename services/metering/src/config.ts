import { z } from 'zod';
import { env, readEnv } from '@gw/config';

const schema = z.object({
  LOG_LEVEL: env.logLevel(),
  /** Serves grpc.health.v1 only: metering has no RPCs of its own. */
  GRPC_HOST: env.host('127.0.0.1'),
  GRPC_PORT: env.port(50055),
  METRICS_HOST: env.host('127.0.0.1'),
  METRICS_PORT: env.port(9469),
  DATABASE_URL: z
    .string({ error: 'expected a PostgreSQL URL' })
    .regex(/^postgres(ql)?:\/\//, 'expected a PostgreSQL URL'),
  KAFKA_BROKERS: env.list('127.0.0.1:9092'),
  USAGE_TOPIC: z.string().min(1).default('gateway.usage.v1'),
  CONSUMER_GROUP: z.string().min(1).default('gateway-metering'),
});

export type MeteringConfig = z.infer<typeof schema>;

export function readMeteringConfig(): MeteringConfig {
  return readEnv(schema);
}
