import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import { Client } from 'pg';
import { kafkaSecurityEnv } from '@gw/config';
import { isServing } from '@gw/grpc';
import { createKafka, ensureTopics } from '@gw/kafka';
import {
  kafkaConnection,
  portsFromBase,
  processSpecs,
  repoRoot,
  seedDemo,
  serviceNodeFlags,
  stackGrpcTransport,
  stateDir,
} from '@gw/local-stack';
import type { StackTls } from '@gw/local-stack';
import { createTestCertificateAuthority, waitUntil } from '@gw/testing';
import { recreateDatabase } from '../support/database';

/**
 * The images `make images` built, run with podman as the chart runs them (read-only root filesystem, the
 * non-root user, no capabilities, mutual TLS between the services) on the host network against the
 * tests' PostgreSQL, Redis and Kafka, with the simulated upstream as a host process. They pass the
 * health checks the kubelet would make, serve the official SDK end to end, and stop on SIGTERM within
 * their grace period, exit code 0, with every request's usage event in metering's PostgreSQL.
 */

const run = promisify(execFile);
const database = 'gateway_images';
const usageTopic = 'gateway.usage.v1.images';
/** Beside the e2e stack (21000) and the chaos stack (23000). */
const ports = portsFromBase(22_000);
const grpcServices = ['auth', 'policy', 'quota', 'router', 'metering'] as const;
type GrpcService = (typeof grpcServices)[number];
/** The plaintext health-only ports (GRPC_HEALTH_PORT) the kubelet's gRPC probes would use. */
const healthPorts: Record<GrpcService, number> = {
  auth: 22_041,
  policy: 22_042,
  quota: 22_043,
  router: 22_044,
  metering: 22_045,
};
/** What a pod gets by default (terminationGracePeriodSeconds). */
const graceSeconds = 30;
const containerName = (service: string) => `gw-images-${service}`;
const model = 'claude-sonnet-5';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the deployment tests through \`make test\``);
  return value;
}

/** podman as the image scripts run it (deploy/images/podman.sh). */
async function podman(...args: string[]): Promise<string> {
  const { stdout } = await run('podman', ['--runtime', 'runc', ...args], { maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}

let imageTag = '';
let workDir = '';
let tls: StackTls;
let simUpstream: ChildProcess | undefined;
let databaseUrl = '';
let liveKey = '';
const requestIds: string[] = [];

const image = (service: string) => `inference-gateway/${service}:${imageTag}`;

/** The container side of the chart's pod: what the securityContext and volumes of the chart say. */
function containerArgs(service: string, env: Record<string, string>, mounts: string[]): string[] {
  return [
    '--network=host',
    '--read-only',
    '--tmpfs=/tmp:rw,size=64m',
    '--user=10001:10001',
    '--cap-drop=ALL',
    '--security-opt=no-new-privileges',
    '--ulimit=nofile=4096:4096',
    '--ulimit=nproc=4096:4096',
    ...mounts.flatMap((mount) => ['-v', mount]),
    ...Object.entries(env).flatMap(([name, value]) => ['-e', `${name}=${value}`]),
    image(service),
  ];
}

async function removeContainers(): Promise<void> {
  await run('podman', ['--runtime', 'runc', 'rm', '-f', '--ignore', ...grpcServices.map(containerName)]).catch(
    () => undefined,
  );
  await run('podman', ['--runtime', 'runc', 'rm', '-f', '--ignore', containerName('ingress')]).catch(() => undefined);
}

async function healthy(service: string): Promise<boolean> {
  if (service === 'ingress') {
    const response = await fetch(`http://127.0.0.1:${ports.admin}/readyz`).catch(() => undefined);
    return response?.status === 200;
  }
  return isServing(`127.0.0.1:${healthPorts[service as GrpcService]}`, { kind: 'plaintext' });
}

async function waitHealthy(service: string): Promise<void> {
  try {
    await waitUntil(() => healthy(service), { what: `${service} healthy`, timeoutMs: 90_000, intervalMs: 250 });
  } catch (error) {
    const logs = await podman('logs', '--tail', '40', containerName(service)).catch(() => '(no logs)');
    throw new Error(`${service} did not become healthy: ${String(error)}\n${logs}`);
  }
}

interface Stopped {
  exitCode: number;
  seconds: number;
}

/** `podman stop`: SIGTERM, then SIGKILL only if the grace period runs out (exit code 137). */
async function stop(service: string): Promise<Stopped> {
  const started = Date.now();
  await podman('stop', '--time', String(graceSeconds), containerName(service));
  const seconds = (Date.now() - started) / 1000;
  const exitCode = Number(await podman('inspect', '--format', '{{.State.ExitCode}}', containerName(service)));
  return { exitCode, seconds };
}

async function usageRows(ids: string[]): Promise<{ event_id: string; outcome: string; output_tokens: string }[]> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ event_id: string; outcome: string; output_tokens: string }>(
      'SELECT event_id, outcome, output_tokens FROM usage_events WHERE event_id = ANY($1)',
      [ids],
    );
    return rows;
  } finally {
    await client.end();
  }
}

function sdk(): Anthropic {
  return new Anthropic({ apiKey: liveKey, baseURL: `http://127.0.0.1:${ports.http}`, maxRetries: 0 });
}

beforeAll(async () => {
  const chart = await readFile(join(repoRoot, 'charts', 'inference-gateway', 'Chart.yaml'), 'utf8');
  imageTag = process.env.IMAGE_TAG ?? /^appVersion: *'?([^'\s]+)'?/m.exec(chart)![1]!;
  for (const service of [...grpcServices, 'ingress']) {
    await podman('image', 'exists', image(service)).catch(() => {
      throw new Error(`image ${image(service)} is missing: run \`make images\` first`);
    });
  }
  await removeContainers();
  workDir = await mkdtemp(join(tmpdir(), 'gw-images-'));
  // The services run as 10001: the files they read must be readable by it (test certificates only).
  await chmod(workDir, 0o755);
  const authority = await createTestCertificateAuthority(join(workDir, 'tls'), 'gateway images CA');
  tls = { caFile: authority.certFile, ...(await authority.issue('gateway-images')) };
  for (const file of [tls.caFile, tls.certFile, tls.keyFile]) await chmod(file, 0o644);
  await chmod(join(workDir, 'tls'), 0o755);
  const spool = join(workDir, 'spool');
  await mkdir(spool, { mode: 0o777 });
  await chmod(spool, 0o777);

  databaseUrl = await recreateDatabase(required('DATABASE_URL'), database);
  const kafkaBrokers = required('KAFKA_BROKERS');
  // Kafka's TLS and SCRAM settings, with the CA file readable by the containers' user.
  const kafkaEnv = kafkaSecurityEnv(process.env);
  const kafka = createKafka({
    ...kafkaConnection({ kafkaBrokers, kafkaEnv }),
    clientId: 'images-setup',
    log: () => undefined,
  });
  const kafkaCa = join(workDir, 'tls', 'kafka-ca.crt');
  if (kafkaEnv.KAFKA_TLS_CA) {
    await copyFile(kafkaEnv.KAFKA_TLS_CA, kafkaCa);
    await chmod(kafkaCa, 0o644);
  }
  await ensureTopics(kafka, [{ topic: usageTopic, numPartitions: 3 }]);

  // The chart's migration Job: auth's image with the migration command.
  await podman(
    'run',
    '--rm',
    '--entrypoint',
    'node',
    ...containerArgs('auth', { DATABASE_URL: databaseUrl }, []),
    'node_modules/@gw/db/dist/migrate-cli.js',
  );

  const inContainer = {
    config: '/etc/gateway/config/gateway.yaml',
    tls: {
      caFile: '/etc/gateway/tls/ca.crt',
      certFile: '/etc/gateway/tls/tls.crt',
      keyFile: '/etc/gateway/tls/tls.key',
    },
    kafkaCa: '/etc/gateway/kafka-ca/ca.crt',
    spool: '/var/lib/gateway/spool',
  };
  const specs = processSpecs({
    repoRoot,
    state: stateDir(workDir),
    ports,
    infra: { databaseUrl, redisUrl: required('REDIS_URL'), kafkaBrokers, kafkaEnv },
    secrets: {
      ADMIN_TOKEN: 'gw_operator_images_test_token_0123456789abcdef',
      KEY_PEPPERS: 'p1:images-test-pepper-0123456789abcdefghijklmnop',
    },
    gatewayConfig: inContainer.config,
    usageTopic,
    consumerGroup: 'gateway-metering-images',
    grpcTls: tls,
  });
  const mounts = [
    `${join(repoRoot, 'deploy', 'local', 'gateway.yaml')}:${inContainer.config}:ro`,
    `${tls.caFile}:${inContainer.tls.caFile}:ro`,
    `${tls.certFile}:${inContainer.tls.certFile}:ro`,
    `${tls.keyFile}:${inContainer.tls.keyFile}:ro`,
    ...(kafkaEnv.KAFKA_TLS_CA ? [`${kafkaCa}:${inContainer.kafkaCa}:ro`] : []),
  ];

  const sim = specs.find((spec) => spec.name === 'sim-upstream')!;
  simUpstream = spawn(process.execPath, [join(repoRoot, sim.script)], {
    env: { ...process.env, ...sim.env },
    stdio: 'ignore',
  });
  for (const spec of specs) {
    if (spec.name === 'sim-upstream') continue;
    // The stack's files, as mounted in the container.
    const env: Record<string, string> = {
      ...spec.env,
      GRPC_TLS_CA: inContainer.tls.caFile,
      GRPC_TLS_CERT: inContainer.tls.certFile,
      GRPC_TLS_KEY: inContainer.tls.keyFile,
    };
    if (env.KAFKA_TLS_CA) env.KAFKA_TLS_CA = inContainer.kafkaCa;
    if (spec.name === 'ingress') {
      env.USAGE_SPOOL_DIR = inContainer.spool;
    } else {
      env.GRPC_HEALTH_PORT = String(healthPorts[spec.name as GrpcService]);
    }
    const volumes = spec.name === 'ingress' ? [...mounts, `${spool}:${inContainer.spool}`] : mounts;
    await podman('run', '--detach', '--name', containerName(spec.name), ...containerArgs(spec.name, env, volumes));
    await waitHealthy(spec.name);
  }
  const demo = await seedDemo(`127.0.0.1:${ports.grpc.auth}`, stackGrpcTransport(tls), {});
  liveKey = demo.liveKey;
}, 300_000);

afterAll(async () => {
  await removeContainers();
  simUpstream?.kill('SIGTERM');
  if (workDir) await rm(workDir, { recursive: true, force: true });
}, 60_000);

describe('the images, run with podman', () => {
  test('run as the non-root user on a read-only root filesystem, labelled with the version', async () => {
    for (const service of [...grpcServices, 'ingress']) {
      const inspected = JSON.parse(await podman('inspect', containerName(service))) as {
        Config: { User: string };
        HostConfig: { ReadonlyRootfs: boolean };
        State: { Running: boolean };
      }[];
      expect(inspected[0]!.State.Running).toBe(true);
      expect(inspected[0]!.HostConfig.ReadonlyRootfs).toBe(true);
      expect(inspected[0]!.Config.User).toBe('10001:10001');
      const label = await podman(
        'image',
        'inspect',
        '--format',
        '{{index .Labels "org.opencontainers.image.version"}}',
        image(service),
      );
      expect(label).toBe(imageTag);
    }
  });

  test('ingress and the router run with the node flags the local stack gives them', async () => {
    for (const service of ['ingress', 'router'] as const) {
      const entrypoint = JSON.parse(
        await podman('image', 'inspect', '--format', '{{json .Config.Entrypoint}}', image(service)),
      ) as string[];
      expect(entrypoint).toEqual(['node', ...serviceNodeFlags[service], 'dist/main.js']);
    }
  });

  test('gRPC services: health on the plaintext health port; the gRPC port itself is mutual TLS only', async () => {
    for (const service of grpcServices) {
      expect(await healthy(service)).toBe(true);
      const address = `127.0.0.1:${ports.grpc[service]}`;
      expect(await isServing(address, stackGrpcTransport(tls))).toBe(true);
      expect(await isServing(address, { kind: 'plaintext' })).toBe(false);
    }
    expect(await healthy('ingress')).toBe(true);
  });

  test("ingress serves the dashboard's assets from its image on the admin port", async () => {
    const page = await fetch(`http://127.0.0.1:${ports.admin}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    const script = /<script[^>]+src="\/?([^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`http://127.0.0.1:${ports.admin}/${script!}`);
    expect(asset.status).toBe(200);
    expect((await asset.text()).length).toBeGreaterThan(1000);
  });

  test('the official SDK, whole and streamed, end to end; each request is metered', async () => {
    const whole = await sdk()
      .messages.create({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hello from the images' }] })
      .withResponse();
    expect(whole.data.content[0]).toMatchObject({ type: 'text' });
    expect(whole.data.usage.output_tokens).toBeGreaterThan(0);
    const wholeId = whole.response.headers.get('request-id')!;

    const stream = sdk().messages.stream({
      model,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'a streamed answer from the images' }],
    });
    const texts: string[] = [];
    stream.on('text', (text) => texts.push(text));
    const streamed = await stream.finalMessage();
    expect(texts.length).toBeGreaterThan(1);
    expect(streamed.usage.output_tokens).toBeGreaterThan(0);
    const streamedId = (await stream.withResponse()).response.headers.get('request-id')!;

    requestIds.push(wholeId, streamedId);
    const rows = await waitUntil(
      () => usageRows([wholeId, streamedId]),
      { what: 'usage rows of both requests', timeoutMs: 30_000, intervalMs: 250 },
      (found) => found.length === 2,
    );
    expect(rows.every((row) => row.outcome === 'success')).toBe(true);
  });

  test('SIGTERM to ingress mid-stream: the stream finishes, ingress exits 0 within its grace, usage is kept', async () => {
    // One word per 300 ms: the stream is still running when the signal comes.
    const stream = sdk().messages.stream({
      model,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'sim:pace=300 one two three four five six seven eight nine ten' }],
    });
    const texts: string[] = [];
    const firstText = new Promise<void>((resolve) =>
      stream.on('text', (text) => {
        texts.push(text);
        resolve();
      }),
    );
    const finished = stream.finalMessage();
    await firstText;
    const stopped = stop('ingress');
    const message = await finished;
    const { exitCode, seconds } = await stopped;

    expect(message.stop_reason).toBe('end_turn');
    expect(texts.join('')).toContain('ten');
    expect(exitCode).toBe(0);
    expect(seconds).toBeLessThan(graceSeconds);
    // New requests are refused once it stopped.
    await expect(fetch(`http://127.0.0.1:${ports.http}/v1/models`)).rejects.toThrow();

    const streamedId = (await stream.withResponse()).response.headers.get('request-id')!;
    requestIds.push(streamedId);
    const rows = await waitUntil(
      () => usageRows([streamedId]),
      { what: 'the usage row of the drained stream', timeoutMs: 30_000, intervalMs: 250 },
      (found) => found.length === 1,
    );
    expect(rows[0]).toMatchObject({ outcome: 'success' });
  });

  test('the other services exit 0 on SIGTERM within their grace; no usage event was lost', async () => {
    for (const service of grpcServices) {
      const { exitCode, seconds } = await stop(service);
      expect({ service, exitCode }).toEqual({ service, exitCode: 0 });
      expect(seconds).toBeLessThan(graceSeconds);
    }
    expect(requestIds).toHaveLength(3);
    expect((await usageRows(requestIds)).map((row) => row.event_id).sort()).toEqual([...requestIds].sort());
  });
});
