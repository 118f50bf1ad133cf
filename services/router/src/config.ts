import { z } from 'zod';
import { env, loadGatewayConfig, readEnv } from '@gw/config';
import type { GatewayConfig } from '@gw/config';
import type { UpstreamTimeouts } from './upstream-http';

const envSchema = z.object({
  GRPC_HOST: env.host('127.0.0.1'),
  GRPC_PORT: env.port(50054),
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
});

export interface RouterConfig {
  grpcHost: string;
  grpcPort: number;
  metricsHost: string;
  metricsPort: number;
  logLevel: string;
  gateway: GatewayConfig;
  upstreamTimeouts: UpstreamTimeouts;
}

/** Reads and validates the environment and the gateway YAML once, at start. */
export async function loadRouterConfig(processEnv: NodeJS.ProcessEnv = process.env): Promise<RouterConfig> {
  const vars = readEnv(envSchema, processEnv);
  return {
    grpcHost: vars.GRPC_HOST,
    grpcPort: vars.GRPC_PORT,
    metricsHost: vars.METRICS_HOST,
    metricsPort: vars.METRICS_PORT,
    logLevel: vars.LOG_LEVEL,
    gateway: await loadGatewayConfig(vars.GATEWAY_CONFIG, processEnv),
    upstreamTimeouts: {
      connectMs: vars.UPSTREAM_CONNECT_TIMEOUT_MS,
      streamHeadersMs: vars.UPSTREAM_STREAM_HEADERS_TIMEOUT_MS,
      messageHeadersMs: vars.UPSTREAM_MESSAGE_TIMEOUT_MS,
      bodySilenceMs: vars.UPSTREAM_BODY_SILENCE_TIMEOUT_MS,
    },
  };
}
