import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '@gw/local-stack';
import type { StackTls } from '@gw/local-stack';

/** What the global setup started, for the tests to use. */
export interface Harness {
  baseUrl: string;
  adminUrl: string;
  /** The operator token of the admin API. */
  adminToken: string;
  simUrls: string[];
  databaseUrl: string;
  kafkaBrokers: string[];
  /** KAFKA_TLS* and KAFKA_SASL_* of the brokers, as the services get them. */
  kafkaEnv: Record<string, string>;
  usageTopic: string;
  authAddress: string;
  /** The stack's mutual TLS files: the CA and the certificate every process presents. */
  grpcTls: StackTls;
  /** Where the webhook receiver of the tests listens (https://localhost:port), and its certificate. */
  webhookReceiver: { port: number; caFile: string; certFile: string; keyFile: string };
  /** Prometheus endpoints by service name. */
  metricsUrls: Record<string, string>;
  logsDir: string;
  /** What a test needs to start more replicas of ingress and quota beside the stack's own. */
  replica: {
    redisUrl: string;
    kafkaBrokers: string;
    gatewayConfig: string;
    policyAddress: string;
    routerAddress: string;
    meteringAddress: string;
    quotaAddress: string;
  };
  accountId: string;
  testKey: string;
  liveKey: string;
}

export const harnessFile = join(repoRoot, '.local', 'e2e', 'harness.json');

export function harness(): Harness {
  return JSON.parse(readFileSync(harnessFile, 'utf8')) as Harness;
}
