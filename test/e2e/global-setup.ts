import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { kafkaSecurityEnv } from '@gw/config';
import { createKafka, ensureTopics } from '@gw/kafka';
import {
  kafkaConnection,
  portsFromBase,
  repoRoot,
  seedDemo,
  serviceNames,
  writeSimWebIdentityToken,
  startServices,
  stateDir,
  stackGrpcTransport,
  stopServices,
} from '@gw/local-stack';
import { createTestCertificateAuthority } from '@gw/testing';
import type { Harness } from './harness';
import { harnessFile } from './harness';
import { giveBackStackLock, takeStackLock } from './stack-lock';
import { recreateDatabase } from '../support/database';

const database = 'gateway_e2e';
const usageTopic = 'gateway.usage.v1.e2e';
/** A port range beside the one `make up` uses, so the tests never touch a developer's stack. */
const portBase = 21_000;
/** The webhook receiver of the tests: HTTPS on loopback, allow-listed in metering by host:port. */
const webhookReceiverPort = 21_065;

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the integration tests through \`make test\``);
  return value;
}

/** Starts the six services and the simulated upstream as real processes against real infrastructure. */
export default async function globalSetup(): Promise<void> {
  await takeStackLock();
  const state = stateDir(join(repoRoot, '.local', 'e2e'));
  await rm(state.root, { recursive: true, force: true });
  await mkdir(state.root, { recursive: true });
  const databaseUrl = await recreateDatabase(required('DATABASE_URL'), database);
  const kafkaBrokers = required('KAFKA_BROKERS');
  // TLS and SCRAM, as infra.sh runs Kafka: the services get the same settings.
  const kafkaEnv = kafkaSecurityEnv(process.env);
  const kafka = createKafka({
    ...kafkaConnection({ kafkaBrokers, kafkaEnv }),
    clientId: 'e2e-setup',
    log: () => undefined,
  });
  await ensureTopics(kafka, [{ topic: usageTopic, numPartitions: 6 }]);
  const ports = portsFromBase(portBase);
  const secrets = {
    ADMIN_TOKEN: `gw_operator_${randomBytes(24).toString('base64url')}`,
    KEY_PEPPERS: `p1:${randomBytes(32).toString('base64url')}`,
  };
  // The services talk mutual TLS, as in production: a CA made for this run, and one certificate it signed
  // that every process (and this setup) presents.
  const authority = await createTestCertificateAuthority(join(state.root, 'tls'), 'gateway e2e CA');
  const grpcTls = { caFile: authority.certFile, ...(await authority.issue('gateway-e2e')) };
  // The webhook receiver's certificate comes from a CA of its own, which only metering trusts.
  const webhookAuthority = await createTestCertificateAuthority(join(state.root, 'webhooks-tls'), 'webhook e2e CA');
  const webhookReceiver = {
    port: webhookReceiverPort,
    caFile: webhookAuthority.certFile,
    ...(await webhookAuthority.issue('webhook-receiver')),
  };
  try {
    await startServices({
      repoRoot,
      state,
      ports,
      infra: { databaseUrl, redisUrl: required('REDIS_URL'), kafkaBrokers, kafkaEnv },
      secrets,
      gatewayConfig: join(repoRoot, 'deploy/local/gateway.yaml'),
      usageTopic,
      consumerGroup: 'gateway-metering-e2e',
      logLevel: 'debug',
      // Requests from 127.0.0.2 play a load balancer; from 127.0.0.1, a client that may spoof headers.
      ingressEnv: { TRUSTED_PROXIES: '127.0.0.2/32', REFUSAL_FLUSH_MS: '500' },
      meteringEnv: {
        WEBHOOK_ALLOWED_PRIVATE_TARGETS: `localhost:${webhookReceiverPort}`,
        WEBHOOK_CA_FILE: webhookReceiver.caFile,
        WEBHOOK_POLL_MS: '100',
        WEBHOOK_RETRY_BASE_MS: '300',
        WEBHOOK_KEY_EXPIRY_SCAN_MS: '500',
      },
      grpcTls,
      // The router's AWS chain assumes a role at the simulated STS with a service-account token (IRSA).
      awsWebIdentityTokenFile: await writeSimWebIdentityToken(join(state.root, 'aws', 'web-identity-token')),
    });
  } catch (error) {
    // Jest runs no teardown after a failed setup: leave nothing running.
    await stopServices({ state }, serviceNames);
    await giveBackStackLock();
    throw error;
  }
  const authAddress = `127.0.0.1:${ports.grpc.auth}`;
  const demo = await seedDemo(authAddress, stackGrpcTransport(grpcTls), {});
  const description: Harness = {
    baseUrl: `http://127.0.0.1:${ports.http}`,
    adminUrl: `http://127.0.0.1:${ports.admin}`,
    adminToken: secrets.ADMIN_TOKEN,
    simUrls: Object.values(ports.sim).map((port) => `http://127.0.0.1:${port}`),
    databaseUrl,
    kafkaBrokers: kafkaBrokers.split(','),
    kafkaEnv,
    usageTopic,
    authAddress,
    grpcTls,
    webhookReceiver,
    metricsUrls: Object.fromEntries(
      Object.entries(ports.metrics).map(([service, port]) => [service, `http://127.0.0.1:${port}/metrics`]),
    ),
    logsDir: state.logs,
    replica: {
      redisUrl: required('REDIS_URL'),
      kafkaBrokers,
      gatewayConfig: join(repoRoot, 'deploy/local/gateway.yaml'),
      policyAddress: `127.0.0.1:${ports.grpc.policy}`,
      routerAddress: `127.0.0.1:${ports.grpc.router}`,
      meteringAddress: `127.0.0.1:${ports.grpc.metering}`,
      quotaAddress: `127.0.0.1:${ports.grpc.quota}`,
    },
    accountId: demo.accountId,
    testKey: demo.testKey,
    liveKey: demo.liveKey,
  };
  await writeFile(harnessFile, JSON.stringify(description, null, 2));
}
