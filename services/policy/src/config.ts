import { z } from 'zod';
import { env, readEnv, readGrpcTransport } from '@gw/config';
import type { GrpcTransport } from '@gw/config';

const schema = z.object({
  LOG_LEVEL: env.logLevel(),
  GRPC_HOST: env.host('127.0.0.1'),
  GRPC_PORT: env.port(50052),
  /** Largest gRPC message received or sent; a request body crosses in one (BODY_LIMIT_BYTES + 1 MiB). */
  GRPC_MAX_MESSAGE_BYTES: env.grpcMaxMessageBytes(),
  METRICS_HOST: env.host('127.0.0.1'),
  METRICS_PORT: env.port(9466),
  GATEWAY_CONFIG: z.string({ error: 'expected the path of the gateway YAML file' }).min(1),
});

export type PolicyConfig = z.infer<typeof schema> & {
  /** Of the gRPC server: mutual TLS from GRPC_TLS_*, or plaintext only with GRPC_INSECURE=true. */
  grpcTransport: GrpcTransport;
};

export function readPolicyConfig(): PolicyConfig {
  return { ...readEnv(schema), grpcTransport: readGrpcTransport() };
}
