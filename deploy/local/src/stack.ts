import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { kafkaSecurityEnv, readKafkaSecurity } from '@gw/config';
import type { KafkaSecurity } from '@gw/config';
import { migrateUp } from '@gw/db';
import { defaultSimAws } from '@gw/sim-upstream';
import { readEnvFile, writeEnvFile } from './env-file';
import { grpcTransportEnv, stackGrpcTransport } from './grpc-tls';
import type { StackTls } from './grpc-tls';
import type { Ports, StateDir } from './layout';
import { isHealthy, pidOf, startProcess, stopProcess, waitHealthy } from './processes';
import type { ProcessSpec } from './processes';

const run = promisify(execFile);

export interface Infra {
  databaseUrl: string;
  redisUrl: string;
  kafkaBrokers: string;
  /** KAFKA_TLS* and KAFKA_SASL_* of the brokers (infra.sh runs TLS and SCRAM); absent or empty: plaintext. */
  kafkaEnv?: Record<string, string>;
}

/** The brokers and their TLS and SASL settings, for a Kafka client of a test or a tool. */
export function kafkaConnection(infra: Pick<Infra, 'kafkaBrokers' | 'kafkaEnv'>): {
  brokers: string[];
  security: KafkaSecurity;
} {
  return { brokers: infra.kafkaBrokers.split(','), security: readKafkaSecurity(infra.kafkaEnv ?? {}) };
}

export interface InfraPorts {
  postgres: number;
  redis: number;
  kafka: number;
}

export interface StackOptions {
  repoRoot: string;
  state: StateDir;
  ports: Ports;
  infra: Infra;
  secrets: Secrets;
  gatewayConfig: string;
  usageTopic: string;
  consumerGroup: string;
  logLevel?: string;
  /** Extra environment for ingress, e.g. TRUSTED_PROXIES in the tests. */
  ingressEnv?: Record<string, string>;
  /** Extra environment for quota, e.g. a short LEASE_TTL_MS in the tests. */
  quotaEnv?: Record<string, string>;
  /** Extra environment for metering, e.g. the tests' webhook receiver on the allow-list. */
  meteringEnv?: Record<string, string>;
  /** Mutual TLS between the processes; without it they run plaintext (GRPC_INSECURE=true), as `make up` does. */
  grpcTls?: StackTls;
  /** OTEL_* variables for every service (where traces go); without them the services trace nothing. */
  tracingEnv?: Record<string, string>;
  /**
   * A service-account token file (`writeSimWebIdentityToken`): the router's AWS chain then assumes a role
   * with it at the simulated STS, as a pod of EKS does (IRSA). Without it, the chain reads a long-term
   * simulated key from the environment.
   */
  awsWebIdentityTokenFile?: string;
  /** Node flags for every process of the stack, before its own (the soak's `--inspect=127.0.0.1:0`). */
  nodeFlags?: string[];
}

/**
 * Writes a projected service-account token as EKS mounts one (a JWT; the simulated STS checks its
 * shape, not its signature), for `awsWebIdentityTokenFile`.
 */
export async function writeSimWebIdentityToken(path: string): Promise<string> {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const claims = { iss: 'https://oidc.eks.eu-west-2.amazonaws.com/id/SIMULATED', aud: 'sts.amazonaws.com' };
  await mkdir(dirname(path), { recursive: true });
  await writeFile(
    path,
    `${part({ alg: 'RS256', kid: 'sim' })}.${part({ ...claims, sub: 'system:serviceaccount:gateway:router' })}.c2lt`,
    {
      mode: 0o600,
    },
  );
  return path;
}

export interface Secrets {
  ADMIN_TOKEN: string;
  KEY_PEPPERS: string;
}

const loopback = '127.0.0.1';

export type GatewayServiceName = 'auth' | 'policy' | 'quota' | 'router' | 'metering' | 'ingress';

/**
 * `NODE_OPTIONS` of each service, here, in its image and in the chart's default values (docs/performance.md,
 * "What each process holds"). `--max-semi-space-size` caps V8's young generation (two semi-spaces, grown under
 * allocation up to the cap each): large for the services that allocate per request on the hot path (ingress and
 * the router), where a small one would promote request-lived objects to the old generation and cost scavenges;
 * small for those that allocate little (auth answers only key-cache misses, policy only privacy modes other
 * than off).
 */
export const serviceNodeOptions: Record<GatewayServiceName, string> = {
  auth: '--max-semi-space-size=1',
  policy: '--max-semi-space-size=2',
  quota: '--max-semi-space-size=2',
  router: '--max-semi-space-size=8',
  metering: '--max-semi-space-size=4',
  ingress: '--max-semi-space-size=16',
};

/**
 * V8 flags of each service's command line, here and in its image (`NODE_OPTIONS` does not accept them; see
 * docs/performance.md, "Garbage collection in ingress" and "What each process holds").
 *
 * Ingress: a floor under the old generation's budget. Ingress holds each large request body several times over
 * (read, checked, sent to policy, taken back, sent to the router) and V8 counts every such buffer against that
 * budget; with the budget sized from a heap of about 30 MB, a 4 MB body set off three full collections whose
 * pauses every other caller waited on. A floor of 128 MB lets a collection take many bodies at once.
 *
 * Router: a budget of the live heap × 1.5 after each full collection, where V8 let it grow to up to four times
 * (an old space of 25 MB live reached 80 MB between collections at load); its old space then stays near 32 MB.
 */
export const serviceNodeFlags: Record<GatewayServiceName, string[]> = {
  auth: [],
  policy: [],
  quota: [],
  router: ['--heap-growing-percent=50'],
  metering: [],
  ingress: ['--initial-old-space-size=128'],
};

/** Where the router finds each simulated pool. */
function simUrlsOf(ports: Ports) {
  return {
    SIM_EU_URL: `http://${loopback}:${ports.sim.eu}`,
    SIM_UK_URL: `http://${loopback}:${ports.sim.uk}`,
    SIM_OPENAI_EU_URL: `http://${loopback}:${ports.sim.openaiEu}`,
    SIM_BEDROCK_UK_URL: `http://${loopback}:${ports.sim.bedrockUk}`,
    SIM_BEDROCK_EU_URL: `http://${loopback}:${ports.sim.bedrockEu}`,
    SIM_VERTEX_EU_URL: `http://${loopback}:${ports.sim.vertexEu}`,
  };
}

/**
 * The regional providers' credential chains run for real against the simulator: the AWS chain assumes a role at
 * the simulated STS with a service-account token (or reads a simulated key from the environment), Google's finds
 * the simulated metadata server.
 */
function providerCredentialsOf(options: StackOptions, ports: Ports): Record<string, string> {
  const awsCredentials: Record<string, string> = options.awsWebIdentityTokenFile
    ? {
        AWS_WEB_IDENTITY_TOKEN_FILE: options.awsWebIdentityTokenFile,
        AWS_ROLE_ARN: 'arn:aws:iam::123456789012:role/gateway-router',
        AWS_ROLE_SESSION_NAME: 'gateway-router',
        AWS_REGION: 'eu-west-2',
        AWS_ENDPOINT_URL_STS: `http://${loopback}:${ports.sim.bedrockUk}`,
      }
    : { AWS_ACCESS_KEY_ID: defaultSimAws.accessKeyId, AWS_SECRET_ACCESS_KEY: defaultSimAws.secretAccessKey };
  return { ...awsCredentials, GCE_METADATA_HOST: `${loopback}:${ports.sim.vertexEu}` };
}

/** The simulated upstream: one listener per local pool. */
function simUpstreamSpec(ports: Ports): ProcessSpec {
  const simPorts = [
    ports.sim.eu,
    ports.sim.uk,
    ports.sim.openaiEu,
    ports.sim.bedrockUk,
    ports.sim.bedrockEu,
    ports.sim.vertexEu,
  ];
  return {
    name: 'sim-upstream',
    script: 'bench/sim-upstream/dist/main.js',
    env: {
      SIM_HOST: loopback,
      SIM_PORTS: simPorts.join(','),
      // Each Bedrock listener checks signatures for its own region.
      SIM_AWS_REGIONS: simPorts.map((port) => (port === ports.sim.bedrockEu ? 'eu-west-1' : 'eu-west-2')).join(','),
    },
    health: { kind: 'http', url: `http://${loopback}:${ports.sim.eu}/_sim/requests` },
  };
}

/** Ingress, wired to the five gRPC services, Kafka and Redis. */
function ingressSpec(
  options: StackOptions,
  base: Record<string, string | undefined>,
  grpc: (name: keyof Ports['grpc']) => string,
): ProcessSpec {
  const { ports, infra } = options;
  return {
    name: 'ingress',
    script: 'services/ingress/dist/main.js',
    env: {
      ...base,
      HTTP_HOST: loopback,
      HTTP_PORT: String(ports.http),
      ADMIN_PORT: String(ports.admin),
      METRICS_PORT: String(ports.metrics.ingress),
      AUTH_ADDRESS: grpc('auth'),
      POLICY_ADDRESS: grpc('policy'),
      QUOTA_ADDRESS: grpc('quota'),
      ROUTER_ADDRESS: grpc('router'),
      METERING_ADDRESS: grpc('metering'),
      KAFKA_BROKERS: infra.kafkaBrokers,
      ...infra.kafkaEnv,
      USAGE_TOPIC: options.usageTopic,
      REDIS_URL: infra.redisUrl,
      ADMIN_TOKEN: options.secrets.ADMIN_TOKEN,
      GATEWAY_CONFIG: options.gatewayConfig,
      USAGE_SPOOL_DIR: join(options.state.root, 'spool', 'ingress'),
      ...options.ingressEnv,
    },
    health: { kind: 'http', url: `http://${loopback}:${ports.admin}/readyz` },
  };
}

/** The six services and the simulated upstream, wired to each other by port. */
export function processSpecs(options: StackOptions): ProcessSpec[] {
  const { ports, infra } = options;
  const base = {
    LOG_LEVEL: options.logLevel ?? 'info',
    METRICS_HOST: loopback,
    GRPC_HOST: loopback,
    ...grpcTransportEnv(options.grpcTls),
    ...options.tracingEnv,
  };
  const grpc = (name: keyof Ports['grpc']) => `${loopback}:${ports.grpc[name]}`;
  const transport = stackGrpcTransport(options.grpcTls);
  const grpcHealth = (name: keyof Ports['grpc']) => ({ kind: 'grpc' as const, address: grpc(name), transport });
  const simUrls = simUrlsOf(ports);
  const providerCredentials = providerCredentialsOf(options, ports);
  const specs: ProcessSpec[] = [
    simUpstreamSpec(ports),
    {
      name: 'auth',
      script: 'services/auth/dist/main.js',
      env: {
        ...base,
        GRPC_PORT: String(ports.grpc.auth),
        METRICS_PORT: String(ports.metrics.auth),
        DATABASE_URL: infra.databaseUrl,
        REDIS_URL: infra.redisUrl,
        GATEWAY_CONFIG: options.gatewayConfig,
        KEY_PEPPERS: options.secrets.KEY_PEPPERS,
      },
      health: grpcHealth('auth'),
    },
    {
      name: 'policy',
      script: 'services/policy/dist/main.js',
      env: {
        ...base,
        GRPC_PORT: String(ports.grpc.policy),
        METRICS_PORT: String(ports.metrics.policy),
        GATEWAY_CONFIG: options.gatewayConfig,
      },
      health: grpcHealth('policy'),
    },
    {
      name: 'quota',
      script: 'services/quota/dist/main.js',
      env: {
        ...base,
        GRPC_PORT: String(ports.grpc.quota),
        METRICS_PORT: String(ports.metrics.quota),
        REDIS_URL: infra.redisUrl,
        DATABASE_URL: infra.databaseUrl,
        GATEWAY_CONFIG: options.gatewayConfig,
        ...options.quotaEnv,
      },
      health: grpcHealth('quota'),
    },
    {
      name: 'router',
      script: 'services/router/dist/main.js',
      env: {
        ...base,
        ...simUrls,
        ...providerCredentials,
        GRPC_PORT: String(ports.grpc.router),
        METRICS_PORT: String(ports.metrics.router),
        GATEWAY_CONFIG: options.gatewayConfig,
      },
      health: grpcHealth('router'),
    },
    {
      name: 'metering',
      script: 'services/metering/dist/main.js',
      env: {
        ...base,
        GRPC_PORT: String(ports.grpc.metering),
        METRICS_PORT: String(ports.metrics.metering),
        DATABASE_URL: infra.databaseUrl,
        KAFKA_BROKERS: infra.kafkaBrokers,
        ...infra.kafkaEnv,
        USAGE_TOPIC: options.usageTopic,
        CONSUMER_GROUP: options.consumerGroup,
        GATEWAY_CONFIG: options.gatewayConfig,
        ...options.meteringEnv,
      },
      health: grpcHealth('metering'),
    },
    ingressSpec(options, base, grpc),
  ];
  const extra = options.nodeFlags ?? [];
  const isService = (name: string): name is GatewayServiceName => Object.hasOwn(serviceNodeOptions, name);
  return specs.map((spec) => ({
    ...spec,
    env: isService(spec.name) ? { NODE_OPTIONS: serviceNodeOptions[spec.name], ...spec.env } : spec.env,
    nodeFlags: [...extra, ...(isService(spec.name) ? serviceNodeFlags[spec.name] : []), ...(spec.nodeFlags ?? [])],
  }));
}

/** Starts PostgreSQL, Redis and Kafka (or reuses running ones) through infra.sh; returns their URLs. */
export async function startInfra(repoRoot: string, state: StateDir, ports: InfraPorts): Promise<Infra> {
  await run('bash', [join(repoRoot, 'deploy/local/infra.sh'), 'up'], {
    env: {
      ...process.env,
      GW_STATE_DIR: state.root,
      GW_PG_PORT: String(ports.postgres),
      GW_REDIS_PORT: String(ports.redis),
      GW_KAFKA_PORT: String(ports.kafka),
    },
    maxBuffer: 16 * 1024 * 1024,
  });
  const env = await readEnvFile(state.infraEnv);
  if (!env.DATABASE_URL || !env.REDIS_URL || !env.KAFKA_BROKERS) {
    throw new Error(`infra.sh up did not write DATABASE_URL, REDIS_URL and KAFKA_BROKERS to ${state.infraEnv}`);
  }
  return {
    databaseUrl: env.DATABASE_URL,
    redisUrl: env.REDIS_URL,
    kafkaBrokers: env.KAFKA_BROKERS,
    kafkaEnv: kafkaSecurityEnv(env),
  };
}

export async function stopInfra(repoRoot: string, state: StateDir): Promise<void> {
  await run('bash', [join(repoRoot, 'deploy/local/infra.sh'), 'down'], {
    env: { ...process.env, GW_STATE_DIR: state.root },
  });
}

/** Secrets made once per state directory and kept, so a second `make up` changes nothing. */
export async function ensureSecrets(state: StateDir): Promise<Secrets> {
  await mkdir(state.root, { recursive: true });
  const existing = await readEnvFile(state.secretsEnv);
  if (existing.ADMIN_TOKEN && existing.KEY_PEPPERS) {
    return { ADMIN_TOKEN: existing.ADMIN_TOKEN, KEY_PEPPERS: existing.KEY_PEPPERS };
  }
  const secrets = {
    ADMIN_TOKEN: `gw_operator_${randomBytes(24).toString('base64url')}`,
    KEY_PEPPERS: `p1:${randomBytes(32).toString('base64url')}`,
  };
  await writeEnvFile(state.secretsEnv, secrets);
  return secrets;
}

/**
 * Migrates, then starts every service that is not already running and healthy. Returns the names it
 * started; an empty list means the stack was already up.
 */
export async function startServices(options: StackOptions, timeoutMs = 60_000): Promise<string[]> {
  await migrateUp(options.infra.databaseUrl);
  const specs = processSpecs(options);
  const started: string[] = [];
  for (const spec of specs) {
    const running = await pidOf(options.state, spec.name);
    if (running !== undefined && (await isHealthy(spec.health))) continue;
    if (running !== undefined) await stopProcess(options.state, spec.name);
    await startProcess(options.state, options.repoRoot, spec);
    started.push(spec.name);
  }
  await waitHealthy(options.state, specs, timeoutMs);
  return started;
}

/** Stops the services in reverse order of start, ingress first so no request is cut mid-way. */
export async function stopServices(options: Pick<StackOptions, 'state'>, names: string[]): Promise<void> {
  for (const name of [...names].reverse()) await stopProcess(options.state, name);
}

export const serviceNames = ['sim-upstream', 'auth', 'policy', 'quota', 'router', 'metering', 'ingress'];
