import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { grpcTransportEnv, isHealthy, repoRoot, stackGrpcTransport } from '@gw/local-stack';
import type { HealthCheck } from '@gw/local-stack';
import { waitUntil } from '@gw/testing';
import type { Harness } from './harness';

export interface Replica {
  process: ChildProcess;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

async function startReplica(script: string, env: Record<string, string>, health: HealthCheck): Promise<Replica> {
  const child = spawn(process.execPath, [join(repoRoot, script)], {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const up = await waitUntil(
    async () => (child.exitCode === null ? await isHealthy(health) : 'exited'),
    { what: `${script} to come up`, timeoutMs: 15_000, intervalMs: 100 },
    (state) => state !== false,
  );
  if (up !== true) throw new Error(`${script} did not come up`);
  return {
    process: child,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** A second quota process sharing the stack's Redis and Postgres. */
export function startQuotaReplica(
  h: Harness,
  ports: { grpc: number; metrics: number },
  databaseUrl: string,
  extraEnv: Record<string, string> = {},
): Promise<Replica> {
  return startReplica(
    'services/quota/dist/main.js',
    {
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: String(ports.grpc),
      METRICS_HOST: '127.0.0.1',
      METRICS_PORT: String(ports.metrics),
      REDIS_URL: h.replica.redisUrl,
      DATABASE_URL: databaseUrl,
      GATEWAY_CONFIG: h.replica.gatewayConfig,
      ...grpcTransportEnv(h.grpcTls),
      ...extraEnv,
    },
    { kind: 'grpc', address: `127.0.0.1:${ports.grpc}`, transport: stackGrpcTransport(h.grpcTls) },
  );
}

/** A second ingress, using the stack's auth, policy and router and the given quota. */
export function startIngressReplica(
  h: Harness,
  ports: { http: number; admin: number; metrics: number },
  quotaAddress: string,
  extraEnv: Record<string, string> = {},
): Promise<Replica> {
  return startReplica(
    'services/ingress/dist/main.js',
    {
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(ports.http),
      ADMIN_PORT: String(ports.admin),
      METRICS_HOST: '127.0.0.1',
      METRICS_PORT: String(ports.metrics),
      AUTH_ADDRESS: h.authAddress,
      POLICY_ADDRESS: h.replica.policyAddress,
      QUOTA_ADDRESS: quotaAddress,
      ROUTER_ADDRESS: h.replica.routerAddress,
      METERING_ADDRESS: h.replica.meteringAddress,
      // A replica stopped at the end of a test finishes what it serves within seconds, not a rollout's minutes.
      SHUTDOWN_GRACE_MS: '5000',
      USAGE_SPOOL_DRAIN_MS: '5000',
      KAFKA_BROKERS: h.replica.kafkaBrokers,
      ...h.kafkaEnv,
      USAGE_TOPIC: h.usageTopic,
      REDIS_URL: h.replica.redisUrl,
      ADMIN_TOKEN: h.adminToken,
      GATEWAY_CONFIG: h.replica.gatewayConfig,
      USAGE_SPOOL_DIR: join(h.logsDir, '..', 'spool', `ingress-${ports.http}`),
      ...grpcTransportEnv(h.grpcTls),
      ...extraEnv,
    },
    { kind: 'http', url: `http://127.0.0.1:${ports.admin}/readyz` },
  );
}
