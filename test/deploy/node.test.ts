import { execFile } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import { Client } from 'pg';
import { pace, waitUntil } from '@gw/testing';

/**
 * The chart's own pods, running for real: a node with a real kubelet, containerd and runc, the CNI bridge,
 * kube-proxy and CoreDNS joins a loopback control plane (deploy/node/node.sh), the images of `make images`
 * are imported into containerd, PostgreSQL, Redis and Kafka run as pods (deploy/node/dev-infra.yaml), and
 * the chart is installed with its hook Jobs (migrations, the usage topic). Then: the official SDK through
 * the ingress Service (whole and streamed); a rolling upgrade of every workload under a steady flow of
 * streams, each pod replacement spanning open streams, none cut and no connection refused; ingress scaled
 * from 3 to 1 with Kafka stopped, then Kafka back: every request's usage event in PostgreSQL exactly once.
 * The node is taken down, and the host restored, in the teardown, whatever happened; it fails, never skips,
 * when the node cannot come up.
 */

const run = promisify(execFile);
const repoRoot = join(__dirname, '..', '..');
const chartDir = join(repoRoot, 'charts', 'inference-gateway');
const nodeScript = join(repoRoot, 'deploy', 'node', 'node.sh');
const namespace = 'gateway';
const release = 'gw';
const services = ['auth', 'policy', 'quota', 'router', 'metering', 'ingress'];
const imageTag = '0.1.0';
/**
 * The images as deploy/images/build.sh names them (`IMAGE_PREFIX`, default `inference-gateway/`): a run
 * can test images of its own without replacing the ones other builds on the machine use.
 */
const imagePrefix = process.env.IMAGE_PREFIX ?? 'inference-gateway/';
const chartRepositoryPrefix = 'inference-gateway/';
if (!imagePrefix.endsWith(chartRepositoryPrefix)) {
  throw new Error(`IMAGE_PREFIX must end with ${chartRepositoryPrefix}, as the chart's image repositories begin`);
}
/** podman names a local image localhost/<name>; the chart puts the registry before its repositories. */
const imageRegistry = `localhost/${imagePrefix.slice(0, -chartRepositoryPrefix.length)}`;
const devInfraImage = 'localhost/gateway-node/dev-infra:1';
/** Fixed (node.sh's default), so that the manifests' hostPath volumes can name it. */
const nodeState = '/var/lib/gateway-node';
const kafkaJars = join(homedir(), '.cache', 'inference-gateway', 'kafka-3.9.1', 'lib');
const adminToken = `gw_operator_${'a'.repeat(48)}`;
const databaseUrl = 'postgres://gateway:gateway-dev@postgres.gateway-dev-infra.svc.cluster.local:5432/gateway';

const print = (line: string) => process.stdout.write(`${line}\n`);
const seconds = (ms: number) => `${(ms / 1_000).toFixed(1)} s`;

let kubeconfig = '';
let helmBinary = '';
let kubectlBinary = '';
let publicUrl = '';
let adminUrl = '';
/** The admin Service's name: the admin port answers only for its own names (its Host check). */
let adminHost = '';

async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await run(kubectlBinary, ['--kubeconfig', kubeconfig, ...args], { maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

async function kubectlJson<T>(...args: string[]): Promise<T> {
  return JSON.parse(await kubectl(...args, '-o', 'json')) as T;
}

async function helm(...args: string[]): Promise<string> {
  const { stdout } = await run(helmBinary, ['--kubeconfig', kubeconfig, '--namespace', namespace, ...args], {
    maxBuffer: 64 * 1024 * 1024,
    timeout: 900_000,
  });
  return stdout;
}

async function timed<T>(what: string, step: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const result = await step();
  print(`node: ${what} took ${seconds(Date.now() - started)}`);
  return result;
}

/**
 * fetch over a new connection per request (`Connection: close`), as a load balancer's health-checked
 * connection pool would: kube-proxy then sends each request to a pod that is ready at that moment.
 */
function fetchOverNewConnection(url: string | URL | Request, init?: RequestInit): Promise<Response> {
  return new Promise((resolve, reject) => {
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const outgoing = httpRequest(
      String(url),
      { method: init?.method ?? 'GET', headers, agent: false, signal: init?.signal ?? undefined },
      (incoming) => {
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(incoming.headers)) {
          for (const each of ([] as string[]).concat(value ?? [])) responseHeaders.append(name, each);
        }
        resolve(
          new Response(Readable.toWeb(incoming) as ReadableStream<Uint8Array>, {
            status: incoming.statusCode ?? 500,
            headers: responseHeaders,
          }),
        );
      },
    );
    outgoing.on('error', reject);
    outgoing.end(typeof init?.body === 'string' ? init.body : undefined);
  });
}

async function admin<T>(method: string, path: string, body: unknown): Promise<T> {
  const response = await fetchOverNewConnection(`${adminUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json', host: adminHost },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`admin ${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

async function testKey(name: string): Promise<{ accountId: string; key: string }> {
  const account = await admin<{ id: string }>('POST', '/accounts', { name, plan: 'starter' });
  await admin('PATCH', `/accounts/${account.id}/limits`, { requests_per_minute: 10_000, concurrency: 100 });
  const key = await admin<{ key: string }>('POST', '/keys', {
    account_id: account.id,
    name,
    environment: 'test',
    residency: 'eu',
    privacy_mode: 'off',
  });
  return { accountId: account.id, key: key.key };
}

/** 503 answers seen by the SDK clients (retryable: the official SDKs try them again by default). */
let overloadedAnswers = 0;
/** Connections that failed (refused, reset) under the SDK clients, which the SDK's retries would hide. */
let connectionFailures = 0;

/** The official SDK; `maxRetries` 0 unless the SDK's own retry policy (2) is what the step measures. */
function sdk(key: string, maxRetries = 0): Anthropic {
  return new Anthropic({
    baseURL: publicUrl,
    apiKey: key,
    maxRetries,
    timeout: 120_000,
    fetch: async (url, init) => {
      const response = await fetchOverNewConnection(url, init).catch((error: unknown) => {
        connectionFailures += 1;
        throw error;
      });
      if (response.status === 503) overloadedAnswers += 1;
      return response;
    },
  });
}
interface Pod {
  metadata: { name: string; uid: string; labels: Record<string, string>; deletionTimestamp?: string };
  status: { phase: string; conditions?: { type: string; status: string }[] };
}

async function pods(ns: string, selector: string): Promise<Pod[]> {
  return (await kubectlJson<{ items: Pod[] }>('get', 'pods', '-n', ns, '-l', selector)).items;
}

const ready = (pod: Pod) =>
  pod.status.phase === 'Running' &&
  pod.status.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True') === true;

async function serviceIp(name: string): Promise<string> {
  return (await kubectl('get', 'service', name, '-n', namespace, '-o', 'jsonpath={.spec.clusterIP}')).trim();
}

/** PostgreSQL of the dev infrastructure, through its Service's ClusterIP (kube-proxy's rules answer the host too). */
async function withDatabase<T>(use: (client: Client) => Promise<T>): Promise<T> {
  const ip = (
    await kubectl('get', 'service', 'postgres', '-n', 'gateway-dev-infra', '-o', 'jsonpath={.spec.clusterIP}')
  ).trim();
  const client = new Client({ connectionString: `postgres://gateway:gateway-dev@${ip}:5432/gateway` });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

async function meteredEventIds(accountId: string): Promise<string[]> {
  return withDatabase(async (client) => {
    const { rows } = await client.query<{ event_id: string }>(
      'SELECT event_id FROM usage_events WHERE account_id = $1',
      [accountId],
    );
    return rows.map((row) => row.event_id);
  });
}

/** deploy/node/node.sh up or down: prints the times its steps took, answers what it printed on stdout. */
async function nodeScriptStep(...args: string[]): Promise<string> {
  const { stdout, stderr } = await run('bash', [nodeScript, ...args], {
    maxBuffer: 16 * 1024 * 1024,
    timeout: 900_000,
  });
  for (const line of stderr.split('\n').filter((each) => /^node: .* after \d+ s/.test(each))) print(`  ${line}`);
  return stdout.trim();
}

async function buildDevInfraImage(): Promise<void> {
  const base = (await run('bash', [join(repoRoot, 'deploy', 'images', 'base-image.sh')])).stdout.trim();
  const context = mkdtempSync(join(tmpdir(), 'gateway-dev-infra-'));
  try {
    cpSync(join(repoRoot, 'deploy', 'node', 'dev-infra'), context, { recursive: true });
    cpSync(kafkaJars, join(context, 'kafka-lib'), { recursive: true });
    await run(
      'podman',
      [
        '--runtime',
        'runc',
        'build',
        '--network=host',
        '--ulimit',
        'nofile=4096:4096',
        '--ulimit',
        'nproc=4096:4096',
        '--build-arg',
        `BASE_IMAGE=${base}`,
        '-t',
        devInfraImage,
        context,
      ],
      { maxBuffer: 64 * 1024 * 1024, timeout: 900_000 },
    );
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}

/** Volumes for ingress's spool claims (no provisioner on this node): hostPath under the node's state. */
function spoolVolumes(count: number): unknown {
  return {
    apiVersion: 'v1',
    kind: 'List',
    items: Array.from({ length: count }, (_, index) => {
      const path = join(nodeState, 'pv', `spool-${index}`);
      mkdirSync(path, { recursive: true });
      // Written by the pod's user (10001); fsGroup does not reach a hostPath.
      chmodSync(path, 0o1777);
      return {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: `gateway-node-spool-${index}` },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: '',
          hostPath: { path },
        },
      };
    }),
  };
}

async function installChart(): Promise<void> {
  await kubectl('create', 'namespace', namespace);
  await kubectl(
    '-n',
    namespace,
    'create',
    'secret',
    'generic',
    'inference-gateway',
    `--from-literal=ADMIN_TOKEN=${adminToken}`,
    `--from-literal=KEY_PEPPERS=p1:${'k'.repeat(43)}`,
    `--from-literal=DATABASE_URL=${databaseUrl}`,
    '--from-literal=REDIS_URL=redis://redis.gateway-dev-infra.svc.cluster.local:6379',
    '--from-literal=KAFKA_BROKERS=kafka.gateway-dev-infra.svc.cluster.local:9092',
    '--from-literal=ANTHROPIC_API_KEY=unset',
  );
  await helm(...chartArguments('install'));
}

function chartArguments(verb: 'install' | 'upgrade', ...extra: string[]): string[] {
  return [
    verb,
    release,
    chartDir,
    '-f',
    join(chartDir, 'values-dev.yaml'),
    '-f',
    join(repoRoot, 'deploy', 'kind', 'values.yaml'),
    '--set',
    `imageRegistry=${imageRegistry}`,
    '--set',
    'ingress.replicas=3',
    // Two of each service that answers every request, as in production (three there): a rollout replaces
    // one while the other serves.
    '--set',
    'router.replicas=2,auth.replicas=2,policy.replicas=2,quota.replicas=2',
    // The test runs the sweeper itself, when it wants it.
    '--set-string',
    'ingress.spoolSweeper.schedule=0 0 1 1 *',
    ...extra,
    '--wait',
    '--timeout',
    '12m',
  ];
}

beforeAll(async () => {
  helmBinary = (await run('bash', [join(repoRoot, 'deploy', 'install-helm.sh')])).stdout.trim();
  kubectlBinary = join(
    (await run('bash', [join(repoRoot, 'deploy', 'cluster', 'install-control-plane.sh')])).stdout.trim(),
    'bin',
    'kubectl',
  );
  await timed('the dev infrastructure image', buildDevInfraImage);
  const images = [...services.map((service) => `localhost/${imagePrefix}${service}:${imageTag}`), devInfraImage];
  kubeconfig = await timed('node up (control plane, containerd, image imports, kubelet, kube-proxy, CoreDNS)', () =>
    nodeScriptStep('up', ...images),
  );
  writeFileSync(join(tmpdir(), 'gateway-node-spool-volumes.json'), JSON.stringify(spoolVolumes(3)));
  await kubectl('apply', '-f', join(tmpdir(), 'gateway-node-spool-volumes.json'));
  await timed('PostgreSQL, Redis and Kafka pods ready', async () => {
    await kubectl('apply', '-f', join(repoRoot, 'deploy', 'node', 'dev-infra.yaml'));
    for (const name of ['postgres', 'redis', 'kafka']) {
      await kubectl('-n', 'gateway-dev-infra', 'rollout', 'status', `deployment/${name}`, '--timeout=300s');
    }
  });
  await timed('helm install --wait (migrations and topic Jobs, six services)', installChart);
  publicUrl = `http://${await serviceIp(`${release}-inference-gateway-ingress`)}:80`;
  adminHost = `${release}-inference-gateway-ingress-admin`;
  adminUrl = `http://${await serviceIp(adminHost)}:8081`;
}, 3_000_000);

afterAll(async () => {
  await timed('node down (host restored)', () => nodeScriptStep('down'));
}, 400_000);

describe('the chart on a real node', () => {
  test('every pod of the release runs and is Ready through its own probes', async () => {
    const all = await pods(namespace, `app.kubernetes.io/instance=${release}`);
    const byService = new Map<string, number>();
    for (const pod of all.filter(ready)) {
      const name = pod.metadata.labels['app.kubernetes.io/name']!;
      byService.set(name, (byService.get(name) ?? 0) + 1);
    }
    expect(Object.fromEntries(byService)).toEqual({ auth: 2, policy: 2, quota: 2, router: 2, metering: 1, ingress: 3 });
  });

  test('the official SDK through the ingress Service: a whole answer and a streamed one', async () => {
    const { key } = await testKey('node-sdk');
    const client = sdk(key);
    const whole = await client.messages.create({
      model: 'claude-sonnet-5',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'hello from a real pod' }],
    });
    expect(whole.type).toBe('message');
    expect(whole.content[0]?.type).toBe('text');
    const stream = client.messages.stream({
      model: 'claude-sonnet-5',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'hello again, streamed' }],
    });
    const deltas: string[] = [];
    stream.on('text', (text) => deltas.push(text));
    const streamed = await stream.finalMessage();
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(streamed.content.map((block) => (block.type === 'text' ? block.text : '')).join(''));
  });

  test('a rolling upgrade under a flow of streams: every pod replaced while streams are open, none cut, none refused', async () => {
    const { key } = await testKey('node-rollout');
    // As clients run: an admission answered 503 (overloaded, retryable) is tried again by the SDK. A stream
    // cut once started, or a connection refused, is a failure whatever the retries.
    const client = sdk(key, 2);
    const overloadedBefore = overloadedAnswers;
    const connectionFailuresBefore = connectionFailures;
    const selector = `app.kubernetes.io/instance=${release}`;
    const before = new Map((await pods(namespace, selector)).map((pod) => [pod.metadata.uid, pod.metadata.name]));
    /** When each pod was first seen terminating. */
    const terminating = new Map<string, number>();
    const streams: { startedAt: number; endedAt?: number; error?: string }[] = [];
    const open: Promise<void>[] = [];
    let flowing = true;
    const watch = (async () => {
      while (flowing) {
        for (const pod of await pods(namespace, selector).catch(() => [] as Pod[])) {
          if (pod.metadata.deletionTimestamp && !terminating.has(pod.metadata.uid)) {
            terminating.set(pod.metadata.uid, Date.now());
          }
        }
        await pace(250);
      }
    })();
    // A stub stream of about 10 s started every 700 ms: always a dozen or so open.
    const flow = (async () => {
      while (flowing) {
        const record: (typeof streams)[number] = { startedAt: Date.now() };
        streams.push(record);
        open.push(
          client.messages
            .stream({
              model: 'claude-sonnet-5',
              max_tokens: 64,
              messages: [{ role: 'user', content: `gw-test:slow stream ${streams.length}` }],
            })
            .finalMessage()
            .then(
              (message) => {
                record.endedAt = Date.now();
                if (message.stop_reason !== 'end_turn') record.error = `stop_reason ${message.stop_reason}`;
              },
              (error: unknown) => {
                record.endedAt = Date.now();
                record.error = error instanceof Error ? `${error.constructor.name}: ${error.message}` : String(error);
              },
            ),
        );
        await pace(700);
      }
    })();
    // The first pod is replaced some 20 s into the upgrade, by when a dozen streams are open anyway.
    await pace(3_000);
    const upgradeStarted = Date.now();
    await timed('helm upgrade --wait (every workload rolls) under streams', () =>
      helm(...chartArguments('upgrade', '--set', 'logLevel=info')),
    );
    const upgradeMs = Date.now() - upgradeStarted;
    flowing = false;
    await flow;
    await watch;
    await Promise.all(open);

    const after = await pods(namespace, selector);
    const survivors = after.filter((pod) => before.has(pod.metadata.uid)).map((pod) => pod.metadata.name);
    const failed = streams.filter((stream) => stream.error !== undefined);
    // A replacement spans an open stream: one started before the old pod began terminating and ended after.
    const spans = [...before].map(([uid, name]) => {
      const at = terminating.get(uid);
      const spanning =
        at === undefined
          ? 0
          : streams.filter((stream) => stream.startedAt < at && (stream.endedAt ?? Infinity) > at).length;
      return { name, spanning, at };
    });
    /** Seconds from the upgrade's start, to place a failure among the pods' terminations. */
    const sinceUpgrade = (at: number | undefined) => (at === undefined ? '-' : seconds(at - upgradeStarted));
    print(
      `node: rolling upgrade in ${seconds(upgradeMs)}: ${streams.length} streams, ${failed.length} failed, ` +
        `${overloadedAnswers - overloadedBefore} admissions answered 503 and retried by the SDK, ` +
        `${connectionFailures - connectionFailuresBefore} connections failed ` +
        `${failed
          .slice(0, 5)
          .map((each) => `[${sinceUpgrade(each.startedAt)} to ${sinceUpgrade(each.endedAt)}: ${each.error}]`)
          .join(' ')}; ` +
        `open streams when each old pod began terminating (and when, since the upgrade began): ` +
        spans.map((span) => `${span.name} ${span.spanning} (${sinceUpgrade(span.at)})`).join(', '),
    );
    expect(survivors).toEqual([]);
    expect(failed).toEqual([]);
    expect(connectionFailures - connectionFailuresBefore).toBe(0);
    for (const span of spans.filter((each) => /-(ingress|router)-/.test(each.name))) {
      expect({ pod: span.name, spanning: span.spanning > 0 }).toEqual({ pod: span.name, spanning: true });
    }
  }, 1_200_000);

  test('ingress scaled from 3 to 1: with Kafka up the leaving pods deliver their spools; with Kafka stopped the sweeper delivers them once Kafka is back, each event once', async () => {
    const { accountId, key } = await testKey('node-scale-in');
    const client = sdk(key);
    const statefulSet = `${release}-inference-gateway-ingress`;
    const answered: string[] = [];
    const send = async (count: number) => {
      for (let index = 0; index < count; index += 1) {
        const { request_id: requestId } = await client.messages
          .create({ model: 'claude-sonnet-5', max_tokens: 16, messages: [{ role: 'user', content: `usage ${index}` }] })
          .withResponse();
        answered.push(requestId!);
      }
    };
    const scaleKafka = async (replicas: number) => {
      await kubectl('-n', 'gateway-dev-infra', 'scale', 'deployment/kafka', `--replicas=${replicas}`);
      await waitUntil(
        async () => {
          const kafka = await pods('gateway-dev-infra', 'app=kafka');
          return kafka.length === replicas && kafka.every(ready);
        },
        { what: `Kafka at ${replicas} pods`, timeoutMs: 180_000, intervalMs: 500 },
      );
    };
    const scaleIngress = async (replicas: number) => {
      await kubectl('-n', namespace, 'scale', `statefulset/${statefulSet}`, `--replicas=${replicas}`);
      await waitUntil(
        async () => {
          const running = await pods(namespace, `app.kubernetes.io/instance=${release},app.kubernetes.io/name=ingress`);
          return running.length === replicas && running.every(ready);
        },
        { what: `ingress at ${replicas} ready pods`, timeoutMs: 600_000, intervalMs: 500 },
      );
    };
    /** Spool segments on the volume of an ordinal (a hostPath of the node). */
    const segmentsOf = async (ordinal: number) => {
      const volume = (
        await kubectl(
          '-n',
          namespace,
          'get',
          'pvc',
          `usage-spool-${statefulSet}-${ordinal}`,
          '-o',
          'jsonpath={.spec.volumeName}',
        )
      ).trim();
      const path = (await kubectl('get', 'pv', volume, '-o', 'jsonpath={.spec.hostPath.path}')).trim();
      return readdirSync(path).filter((name) => name.endsWith('.spool')).length;
    };

    // Kafka up: the two pods scaled away deliver what they hold before they exit.
    await send(12);
    await timed('ingress 3 -> 1 with Kafka up', () => scaleIngress(1));
    const leftWithKafkaUp = [await segmentsOf(1), await segmentsOf(2)];
    await timed('ingress 1 -> 3', () => scaleIngress(3));

    // Kafka stopped: the leaving pods cannot deliver; their usage waits on their retained volumes.
    await timed('Kafka stopped', () => scaleKafka(0));
    await send(30);
    await timed('ingress 3 -> 1 with Kafka stopped', () => scaleIngress(1));
    const leftWithKafkaDown = [await segmentsOf(1), await segmentsOf(2)];
    await timed('Kafka back', () => scaleKafka(1));
    // The sweeper (its CronJob run now) starts a drain Job for each volume no pod serves.
    await timed('the spool sweeper and its drain Jobs', async () => {
      await kubectl(
        '-n',
        namespace,
        'create',
        'job',
        'sweep-now',
        `--from=cronjob/${release}-inference-gateway-spool-sweeper`,
      );
      await kubectl('-n', namespace, 'wait', '--for=condition=complete', 'job/sweep-now', '--timeout=180s');
      for (const ordinal of [1, 2]) {
        await kubectl(
          '-n',
          namespace,
          'wait',
          '--for=condition=complete',
          `job/${statefulSet}-spool-drain-${ordinal}`,
          '--timeout=300s',
        );
      }
    });
    const leftAfterSweep = [await segmentsOf(1), await segmentsOf(2)];

    const metered = await waitUntil(
      () => meteredEventIds(accountId),
      { what: 'every usage event in PostgreSQL', timeoutMs: 420_000, intervalMs: 2_000 },
      (ids) => ids.length >= answered.length,
    );
    print(
      `node: scale-in: spool segments of ordinals 1 and 2 after 3 -> 1 with Kafka up ${leftWithKafkaUp.join('/')}, ` +
        `with Kafka stopped ${leftWithKafkaDown.join('/')}, after the sweep ${leftAfterSweep.join('/')}; ` +
        `${answered.length} requests answered, ${metered.length} usage events in PostgreSQL`,
    );
    expect(leftWithKafkaUp).toEqual([0, 0]);
    expect(leftWithKafkaDown.reduce((sum, count) => sum + count, 0)).toBeGreaterThan(0);
    expect(leftAfterSweep).toEqual([0, 0]);
    expect([...metered].sort()).toEqual([...answered].sort());
  }, 1_800_000);
});
