import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Redis from 'ioredis';
import { kafkaSecurityEnv } from '@gw/config';
import { createPool, migrateUp } from '@gw/db';
import { createKafka, ensureTopics } from '@gw/kafka';
import {
  kafkaConnection,
  pidOf,
  portsFromBase,
  processSpecs,
  startInfra,
  startProcess,
  stateDir,
  stopInfra,
  stopServices,
  waitHealthy,
} from '@gw/local-stack';
import type { Infra, Ports } from '@gw/local-stack';
import { createTestCertificateAuthority } from '@gw/testing';
import { KeyEnvironment, PrivacyMode, ResidencyTier } from '@gw/vocabulary';
import type { Cleanup } from './cleanup';

/** The gateway's six services as real processes on their own ports, database and topic. */

export const gatewayServices = ['auth', 'policy', 'quota', 'router', 'metering', 'ingress'] as const;
export type GatewayService = (typeof gatewayServices)[number];

/**
 * One model per upstream listener, the latency cases' upstream and the throughput case's; and the latency
 * listener again through a Bedrock pool (SigV4, the event stream).
 */
export const benchModels = {
  latency: 'bench-latency',
  throughput: 'bench-throughput',
  bedrock: 'bench-bedrock',
} as const;

const database = 'gateway_bench';
const consumerGroup = 'gateway-metering-bench';

/**
 * The shape of deploy/local/gateway.yaml with one EU region, one pool per mock listener (URLs from
 * the router's environment) and a plan whose limits never refuse the benchmark.
 */
const gatewayYaml = `# Written by bench/gateway for one run; removed at its end.
regions:
  - id: eu-west
    jurisdiction: eu

tiers:
  - id: eu
    providerRegions: [eu-west-1]

pools:
  - id: mock-latency
    region: eu-west
    adapter: anthropic
    endpoints:
      - url: \${MOCK_LATENCY_URL}
  - id: mock-throughput
    region: eu-west
    adapter: anthropic
    endpoints:
      - url: \${MOCK_THROUGHPUT_URL}
  - id: mock-bedrock
    region: eu-west
    adapter: bedrock
    endpoints:
      - url: \${MOCK_LATENCY_URL}
    bedrock: { region: eu-west-1 }
    processingRegions: [eu-west-1]

models:
  - alias: ${benchModels.latency}
    displayName: Bench (latency cases)
    createdAt: '2025-01-01T00:00:00Z'
    pricing: { inputGbpPerMtok: 1, outputGbpPerMtok: 1 }
    servedBy:
      - { pool: mock-latency, upstreamModel: bench-latency }
  - alias: ${benchModels.throughput}
    displayName: Bench (throughput case)
    createdAt: '2025-01-01T00:00:00Z'
    pricing: { inputGbpPerMtok: 1, outputGbpPerMtok: 1 }
    servedBy:
      - { pool: mock-throughput, upstreamModel: bench-throughput }
  - alias: ${benchModels.bedrock}
    displayName: Bench (latency case through Bedrock)
    createdAt: '2025-01-01T00:00:00Z'
    pricing: { inputGbpPerMtok: 1, outputGbpPerMtok: 1 }
    servedBy:
      - { pool: mock-bedrock, upstreamModel: 'anthropic.bench-v1:0' }

plans:
  - id: bench
    residency: [eu]
    models: all
    limits: { requestsPerMinute: 100000000, concurrency: 100000, monthlyTokens: 1000000000000 }
    overage: { enabled: false, gbpPerMtok: 0 }
`;

export interface ResolvedInfra extends Infra {
  /** Where each server listens, to find its process. */
  ports: { postgres: number; redis: number; kafka: number };
}

function portOf(url: string, fallback: number): number {
  return Number(new URL(url).port) || fallback;
}

/**
 * PostgreSQL, Redis and Kafka: those the environment names (all three), otherwise through infra.sh
 * with a state directory of the benchmark's own. infra.sh reuses servers already listening on the
 * default ports (the tests' or `make up`'s) and records only what it starts itself, so stopping it
 * at the end stops only what this run started.
 */
export async function resolveInfra(repoRoot: string, cleanup: Cleanup): Promise<ResolvedInfra> {
  const { DATABASE_URL, REDIS_URL, KAFKA_BROKERS } = process.env;
  let infra: Infra;
  if (DATABASE_URL && REDIS_URL && KAFKA_BROKERS) {
    infra = {
      databaseUrl: DATABASE_URL,
      redisUrl: REDIS_URL,
      kafkaBrokers: KAFKA_BROKERS,
      kafkaEnv: kafkaSecurityEnv(process.env),
    };
  } else {
    const state = stateDir(join(repoRoot, '.local', 'bench-infra'));
    cleanup.add('stop the infrastructure this run started', () => stopInfra(repoRoot, state));
    infra = await startInfra(repoRoot, state, { postgres: 5432, redis: 6379, kafka: 9092 });
  }
  const kafkaUrl = `kafka://${infra.kafkaBrokers.split(',')[0]}`;
  for (const url of [infra.databaseUrl, infra.redisUrl, kafkaUrl].map((text) => new URL(text))) {
    if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost') {
      throw new Error(`the benchmark runs against loopback servers only, not ${url.host}`);
    }
  }
  return {
    ...infra,
    ports: {
      postgres: portOf(infra.databaseUrl, 5432),
      redis: portOf(infra.redisUrl, 6379),
      kafka: portOf(kafkaUrl, 9092),
    },
  };
}

async function recreateDatabase(adminUrl: string, cleanup: Cleanup): Promise<string> {
  const admin = createPool(adminUrl, () => undefined, 1);
  cleanup.add('close the admin pool', () => admin.end());
  // A run that was killed may have left it behind.
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${database}`);
  cleanup.add(`drop the database ${database}`, () => admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** A topic and consumer group of this run, deleted at its end. */
async function createUsageTopic(infra: Infra, run: string, cleanup: Cleanup): Promise<string> {
  const topic = `gateway.usage.v1.bench.${run}`;
  const kafka = createKafka({ ...kafkaConnection(infra), clientId: 'bench-gateway', log: () => undefined });
  cleanup.add(`delete the topic ${topic}`, async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.deleteTopics({ topics: [topic] });
      await admin.deleteGroups([`${consumerGroup}-${run}`]).catch(() => undefined);
    } finally {
      await admin.disconnect();
    }
  });
  await ensureTopics(kafka, [{ topic, numPartitions: 6 }]);
  return topic;
}

export interface GatewayStackOptions {
  repoRoot: string;
  /** A temporary directory of this run: logs, pid files, the usage spool, the YAML. */
  root: string;
  portBase: number;
  infra: Infra;
  logLevel: string;
  /** Where the mock upstream's listeners are, by model. */
  upstreamUrls: { latency: string; throughput: string };
  /** Mutual TLS between the services (a CA made for the run, one certificate every process presents); else plaintext. */
  grpcTls: boolean;
  /** When set, every service runs with --cpu-prof and writes its profile into <dir>/<service>. */
  profileDir?: string;
  /** OTEL_* variables for every service; without them the services trace nothing. */
  tracingEnv?: Record<string, string>;
}

export interface GatewayStack {
  ports: Ports;
  /** The public API, http://127.0.0.1:<port>. */
  baseUrl: string;
  liveKey: string;
  pids: Map<GatewayService, number>;
  metricsUrls: string[];
  logsDir: string;
  /** Stops the services (each writes its CPU profile on the way out); safe to call twice. */
  stopServices(): Promise<void>;
}

/** JSON to the admin API with the operator token; fails on any status but 201. */
async function adminPost(adminUrl: string, token: string, path: string, body: unknown): Promise<unknown> {
  const response = await fetch(`${adminUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  if (response.status !== 201) throw new Error(`POST ${path}: HTTP ${response.status}: ${await response.text()}`);
  return response.json();
}

/** An account on the bench plan and its live key, made as an operator would (docs/admin-api.md). */
async function seedLiveKey(adminUrl: string, token: string): Promise<{ accountId: string; liveKey: string }> {
  const account = (await adminPost(adminUrl, token, '/admin/v1/accounts', { name: 'Bench', plan: 'bench' })) as {
    id: string;
  };
  const key = (await adminPost(adminUrl, token, '/admin/v1/keys', {
    account_id: account.id,
    name: 'bench live key',
    environment: KeyEnvironment.live,
    residency: ResidencyTier.eu,
    privacy_mode: PrivacyMode.off,
  })) as { key: string };
  return { accountId: account.id, liveKey: key.key };
}

/** Quota counters of the run's account (live counters outlive the month). */
async function deleteQuotaCounters(redisUrl: string, accountId: string): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `q:{a:${accountId}:*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

export async function startGatewayStack(options: GatewayStackOptions, cleanup: Cleanup): Promise<GatewayStack> {
  const run = randomBytes(4).toString('hex');
  const state = stateDir(options.root);
  const ports = portsFromBase(options.portBase);
  const gatewayConfig = join(options.root, 'gateway.yaml');
  await writeFile(gatewayConfig, gatewayYaml);
  const databaseUrl = await recreateDatabase(options.infra.databaseUrl, cleanup);
  const usageTopic = await createUsageTopic(options.infra, run, cleanup);
  await migrateUp(databaseUrl);

  const secrets = {
    ADMIN_TOKEN: `gw_operator_${randomBytes(24).toString('base64url')}`,
    KEY_PEPPERS: `p1:${randomBytes(32).toString('base64url')}`,
  };
  const authority = options.grpcTls
    ? await createTestCertificateAuthority(join(options.root, 'tls'), 'gateway bench CA')
    : undefined;
  const grpcTls = authority && { caFile: authority.certFile, ...(await authority.issue('gateway-bench')) };
  const specs = processSpecs({
    repoRoot: options.repoRoot,
    state,
    ports,
    infra: { ...options.infra, databaseUrl },
    secrets,
    gatewayConfig,
    usageTopic,
    consumerGroup: `${consumerGroup}-${run}`,
    logLevel: options.logLevel,
    grpcTls,
    tracingEnv: options.tracingEnv,
  })
    // The mock upstream replaces the simulated one.
    .filter((spec) => spec.name !== 'sim-upstream')
    .map((spec) => ({
      ...spec,
      // Every service reads the YAML, so every one needs the variables it names.
      env: {
        ...spec.env,
        MOCK_LATENCY_URL: options.upstreamUrls.latency,
        MOCK_THROUGHPUT_URL: options.upstreamUrls.throughput,
      },
      nodeFlags: [
        ...(spec.nodeFlags ?? []),
        ...(options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${join(options.profileDir, spec.name)}`] : []),
      ],
    }));
  const names = specs.map((spec) => spec.name);
  // Known once seeded; the cleanup is registered now so that it runs after the services stop.
  const account: { id?: string } = {};
  cleanup.add('delete the quota counters', async () => {
    if (account.id) await deleteQuotaCounters(options.infra.redisUrl, account.id);
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await stopServices({ state }, names);
  };
  cleanup.add('stop the gateway services', stop);
  for (const spec of specs) {
    if (options.profileDir) await mkdir(join(options.profileDir, spec.name), { recursive: true });
    await startProcess(state, options.repoRoot, spec);
  }
  await waitHealthy(state, specs, 60_000);

  const seeded = await seedLiveKey(`http://127.0.0.1:${ports.admin}`, secrets.ADMIN_TOKEN);
  account.id = seeded.accountId;
  const pids = new Map<GatewayService, number>();
  for (const name of gatewayServices) {
    const pid = await pidOf(state, name);
    if (pid === undefined) throw new Error(`${name} is not running; see ${join(state.logs, `${name}.log`)}`);
    pids.set(name, pid);
  }
  return {
    ports,
    baseUrl: `http://127.0.0.1:${ports.http}`,
    liveKey: seeded.liveKey,
    pids,
    // Ingress serves no gRPC: the five others count every call they handled.
    metricsUrls: (['auth', 'policy', 'quota', 'router', 'metering'] as const).map(
      (name) => `http://127.0.0.1:${ports.metrics[name]}/metrics`,
    ),
    logsDir: state.logs,
    stopServices: stop,
  };
}
