import { z } from 'zod';
import { env, readEnv, readGrpcTransport } from '@gw/config';
import type { GrpcTransport } from '@gw/config';
import { readTracingConfig } from '@gw/telemetry';
import type { TracingConfig } from '@gw/telemetry';

const pepperList = z.string({ error: 'expected id:secret[,id:secret…]' }).transform((value, context) => {
  const peppers = value.split(',').map((entry) => {
    const separator = entry.indexOf(':');
    return { id: entry.slice(0, separator).trim(), secret: entry.slice(separator + 1).trim() };
  });
  if (peppers.some((pepper) => !/^[A-Za-z0-9_-]+$/.test(pepper.id) || pepper.secret.length < 16)) {
    context.addIssue({
      code: 'custom',
      message: 'expected id:secret[,id:secret…] with secrets of at least 16 characters',
    });
    return z.NEVER;
  }
  return peppers;
});

const schema = z.object({
  LOG_LEVEL: env.logLevel(),
  GRPC_HOST: env.host('127.0.0.1'),
  GRPC_PORT: env.port(50051),
  /** Largest gRPC message received or sent. */
  GRPC_MAX_MESSAGE_BYTES: env.grpcMaxMessageBytes(),
  METRICS_HOST: env.host('127.0.0.1'),
  METRICS_PORT: env.port(9465),
  DATABASE_URL: z
    .string({ error: 'expected a PostgreSQL URL' })
    .regex(/^postgres(ql)?:\/\//, 'expected a PostgreSQL URL'),
  GATEWAY_CONFIG: z.string({ error: 'expected the path of the gateway YAML file' }).min(1),
  /** The first pepper signs new keys; the others still verify, so a pepper can be rotated. */
  KEY_PEPPERS: pepperList,
  KEY_ISSUER: z
    .string()
    .regex(/^[a-z]{2,12}$/, 'expected 2 to 12 lower-case letters')
    .default('gw'),
  /** Revocations and suspensions are broadcast here, so that every replica forgets at once. */
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'expected a redis:// URL')
    .default('redis://127.0.0.1:6379'),
  /** How long a verified key may be served from memory before the database confirms it again. */
  KEY_CACHE_TTL_MS: env.positiveInt(5_000),
  /** How often recorded key uses are written, in one statement. */
  LAST_USED_FLUSH_MS: env.positiveInt(5_000),
});

export type AuthConfig = z.infer<typeof schema> & {
  /** Of the gRPC server: mutual TLS from GRPC_TLS_*, or plaintext only with GRPC_INSECURE=true. */
  grpcTransport: GrpcTransport;
  /** Tracing from the standard OTEL_* variables; off unless an OTLP endpoint is set. */
  tracing: TracingConfig;
};

export function readAuthConfig(): AuthConfig {
  return { ...readEnv(schema), grpcTransport: readGrpcTransport(), tracing: readTracingConfig(process.env, 'auth') };
}
