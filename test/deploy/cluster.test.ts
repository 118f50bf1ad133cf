import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { waitUntil } from '@gw/testing';

/**
 * The chart against a real Kubernetes API server (deploy/cluster/control-plane.sh: etcd, kube-apiserver,
 * controller manager and scheduler on loopback): install, upgrade with a new gateway YAML and image tag,
 * rollback, uninstall. The nodes are kwok's fake ones: their pods turn Running and Ready without any
 * container being started, so this proves what the API server, the controllers and Helm make of the
 * chart (validation, hooks, rollouts, garbage collection), not that the services run; the images-run
 * test does that.
 */

const run = promisify(execFile);
const repoRoot = join(__dirname, '..', '..');
const chartDir = join(repoRoot, 'charts', 'inference-gateway');
const stateDir = join(repoRoot, '.local', 'cluster-test');
const controlPlane = join(repoRoot, 'deploy', 'cluster', 'control-plane.sh');
const namespace = 'gateway';
const release = 'gw';
const grpcServices = ['auth', 'policy', 'quota', 'router', 'metering'];
const kubeconfig = join(stateDir, 'kubeconfig');

let helmBinary = '';
let kubectlBinary = '';

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
    timeout: 600_000,
  });
  return stdout;
}

async function apply(manifest: unknown): Promise<void> {
  const file = join(stateDir, 'apply.json');
  writeFileSync(file, JSON.stringify(manifest));
  await kubectl('apply', '-f', file);
}

interface Workload {
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  spec: {
    replicas?: number;
    template: {
      metadata: { annotations?: Record<string, string> };
      spec: { containers: { name: string; image: string }[] };
    };
  };
  status: { replicas?: number; readyReplicas?: number; updatedReplicas?: number; observedGeneration?: number };
}

interface List<T> {
  items: T[];
}

interface Pod {
  metadata: { name: string; labels: Record<string, string> };
  spec: { containers: { image: string }[]; nodeName?: string };
  status: { phase: string; conditions?: { type: string; status: string }[] };
}

const selector = `app.kubernetes.io/instance=${release}`;

async function workloads(): Promise<Workload[]> {
  const list = await kubectlJson<List<Workload>>('get', 'deployments,statefulsets', '-n', namespace, '-l', selector);
  return list.items;
}

function image(workload: Workload): string {
  return workload.spec.template.spec.containers[0]!.image;
}

async function pods(): Promise<Pod[]> {
  return (await kubectlJson<List<Pod>>('get', 'pods', '-n', namespace, '-l', selector)).items;
}

interface Node {
  status: { conditions?: { type: string; status: string }[] };
}

const isReady = (object: Node) =>
  object.status.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True') === true;
const ready = (pod: Pod) => pod.status.phase === 'Running' && isReady(pod);

async function gatewayConfig(): Promise<string> {
  const map = await kubectlJson<{ data: Record<string, string> }>(
    'get',
    'configmap',
    `${release}-inference-gateway-config`,
    '-n',
    namespace,
  );
  return map.data['gateway.yaml']!;
}

/** Every object of every namespaced kind the API server lists that carries the release's label. */
async function labelledObjects(): Promise<string[]> {
  const kinds = (await kubectl('api-resources', '--verbs=list', '--namespaced', '-o', 'name'))
    .split('\n')
    .filter((kind) => kind && kind !== 'events' && kind !== 'events.events.k8s.io');
  const found = await kubectl('get', kinds.join(','), '-n', namespace, '-l', selector, '-o', 'name');
  return found.split('\n').filter(Boolean).sort();
}

/** The rest of values the test installs with: the kwok storage class, and TLS from a provided Secret. */
const installValues = [
  '--set',
  'ingress.spool.storageClassName=kwok-volume',
  '--set',
  'grpc.tls.source=existingSecret',
  '--set',
  'grpc.tls.existingSecret=gateway-grpc-tls',
];

async function startControlPlane(): Promise<void> {
  // A run killed half-way may have left its control plane: stopped by the pids it recorded.
  await run('bash', [controlPlane, 'down', stateDir]);
  await run('bash', [controlPlane, 'up', stateDir], { timeout: 300_000 });
}

async function createClusterObjects(): Promise<void> {
  for (const [index, zone] of ['zone-a', 'zone-b'].entries()) {
    const name = `kwok-node-${index}`;
    const capacity = { cpu: '16', memory: '64Gi', pods: '110' };
    await apply({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name,
        annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
        labels: {
          'kubernetes.io/hostname': name,
          'kubernetes.io/os': 'linux',
          'kubernetes.io/arch': 'amd64',
          'topology.kubernetes.io/zone': zone,
          type: 'kwok',
        },
      },
      status: { allocatable: capacity, capacity },
    });
  }
  await waitUntil(
    async () => (await kubectlJson<List<Node>>('get', 'nodes')).items,
    { what: 'both fake nodes Ready', timeoutMs: 60_000, intervalMs: 500 },
    (nodes) => nodes.length === 2 && nodes.every(isReady),
  );
  await apply({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'kwok-volume' },
    provisioner: 'kwok.x-k8s.io/volume',
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'Immediate',
  });
  await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  // The Secrets the operator creates before installing (the chart only names them). No pod runs, so
  // their contents only need the right keys.
  await apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'inference-gateway', namespace },
    stringData: {
      ADMIN_TOKEN: 'cluster-test-operator-token',
      KEY_PEPPERS: 'p1:cluster-test-pepper-0123456789',
      DATABASE_URL: 'postgres://gateway@postgres.example:5432/gateway',
      REDIS_URL: 'redis://redis.example:6379',
      KAFKA_BROKERS: 'kafka.example:9092',
      ANTHROPIC_API_KEY: 'cluster-test-upstream-key',
    },
  });
  await apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'gateway-grpc-tls', namespace },
    type: 'kubernetes.io/tls',
    stringData: { 'tls.crt': 'not used', 'tls.key': 'not used', 'ca.crt': 'not used' },
  });
}

beforeAll(async () => {
  mkdirSync(join(repoRoot, '.local'), { recursive: true });
  helmBinary = (await run('bash', [join(repoRoot, 'deploy', 'install-helm.sh')])).stdout.trim();
  // Built and cached by the control-plane stage of make test; prints its directory.
  const tools = (await run('bash', [join(repoRoot, 'deploy', 'cluster', 'install-control-plane.sh')])).stdout.trim();
  kubectlBinary = join(tools, 'bin', 'kubectl');
  await startControlPlane();
  mkdirSync(stateDir, { recursive: true });
  await createClusterObjects();
}, 420_000);

afterAll(async () => {
  // Whatever happened above: every process of the control plane stopped, its state removed.
  await run('bash', [controlPlane, 'down', stateDir]);
}, 60_000);

describe('the chart on a real API server', () => {
  let firstConfig = '';

  test('helm install --wait: the migration hook Job completes, every workload becomes ready', async () => {
    await helm('install', release, chartDir, ...installValues, '--wait', '--timeout', '5m');
    expect(await helm('status', release, '-o', 'json')).toContain('"status":"deployed"');
    const installed = await workloads();
    expect(installed.map((workload) => workload.metadata.name).sort()).toEqual(
      [...grpcServices, 'ingress'].map((service) => `${release}-inference-gateway-${service}`).sort(),
    );
    for (const workload of installed) {
      expect(workload.status.readyReplicas).toBe(workload.spec.replicas);
    }
    const running = await pods();
    expect(running.length).toBeGreaterThanOrEqual(installed.length);
    expect(running.every(ready)).toBe(true);
    // The scheduler placed them on the fake nodes; the spool claims of ingress were bound.
    expect(running.every((pod) => pod.spec.nodeName?.startsWith('kwok-node-'))).toBe(true);
    const claims = await kubectlJson<List<{ status: { phase: string } }>>('get', 'pvc', '-n', namespace);
    expect(claims.items.length).toBeGreaterThan(0);
    expect(claims.items.every((claim) => claim.status.phase === 'Bound')).toBe(true);
    // The hook Job ran to completion and was deleted (hook-succeeded); a failed one would have failed install.
    expect(await kubectl('get', 'jobs', '-n', namespace, '-o', 'name')).toBe('');
    firstConfig = await gatewayConfig();
  }, 420_000);

  test('helm upgrade --wait with a new gateway YAML and image tag rolls every workload out', async () => {
    const changedConfig = firstConfig.replace('requestsPerMinute: 60', 'requestsPerMinute: 120');
    expect(changedConfig).not.toBe(firstConfig);
    const configFile = join(stateDir, 'gateway-upgraded.yaml');
    writeFileSync(configFile, changedConfig);
    const tags = [...grpcServices, 'ingress'].flatMap((service) => ['--set', `${service}.image.tag=0.1.1`]);
    await helm(
      'upgrade',
      release,
      chartDir,
      ...installValues,
      ...tags,
      '--set-file',
      `gatewayConfig=${configFile}`,
      '--wait',
      '--timeout',
      '5m',
    );
    expect(await gatewayConfig()).toBe(changedConfig);
    for (const workload of await workloads()) {
      expect(image(workload)).toMatch(/:0\.1\.1$/);
      expect(workload.status.updatedReplicas).toBe(workload.spec.replicas);
      await kubectl(
        'rollout',
        'status',
        `${workload.kind}/${workload.metadata.name}`,
        '-n',
        namespace,
        '--timeout=120s',
      );
    }
    // Only pods of the new template are left, all ready.
    const rolled = await waitUntil(
      pods,
      { what: 'only pods of the upgraded template, all ready', timeoutMs: 120_000, intervalMs: 500 },
      (all) => all.every((pod) => pod.spec.containers[0]!.image.endsWith(':0.1.1') && ready(pod)),
    );
    expect(rolled.length).toBeGreaterThan(0);
  }, 420_000);

  test('helm rollback --wait returns the first gateway YAML and images', async () => {
    await helm('rollback', release, '1', '--wait', '--timeout', '5m');
    expect(await gatewayConfig()).toBe(firstConfig);
    for (const workload of await workloads()) {
      expect(image(workload)).toMatch(/:0\.1\.0$/);
    }
    await waitUntil(
      pods,
      { what: 'only pods of the first release, all ready', timeoutMs: 120_000, intervalMs: 500 },
      (all) => all.length > 0 && all.every((pod) => pod.spec.containers[0]!.image.endsWith(':0.1.0') && ready(pod)),
    );
    const history = JSON.parse(await helm('history', release, '-o', 'json')) as { revision: number; status: string }[];
    expect(history.map((entry) => entry.status)).toEqual(['superseded', 'superseded', 'deployed']);
  }, 420_000);

  test('helm uninstall leaves nothing of the release but the spool volumes it keeps on purpose', async () => {
    await helm('uninstall', release, '--wait', '--timeout', '5m');
    // Pods go through the garbage collector and kwok's deletion; wait for them, then look at every kind.
    const left = await waitUntil(
      labelledObjects,
      { what: 'nothing of the release but its spool claims', timeoutMs: 120_000, intervalMs: 1_000 },
      (names) => names.every((name) => name.startsWith('persistentvolumeclaim/')),
    );
    // The StatefulSet retains its claims when deleted (a spool may hold undelivered usage events): the
    // operator deletes them once drained, after which nothing of the release is left.
    expect(left.length).toBeGreaterThan(0);
    expect(left.every((name) => name.startsWith('persistentvolumeclaim/usage-spool-'))).toBe(true);
    await kubectl('delete', 'pvc', '-n', namespace, '-l', selector, '--wait=true', '--timeout=120s');
    expect(await labelledObjects()).toEqual([]);
    expect(await kubectl('get', 'secrets', '-n', namespace, '-l', 'owner=helm', '-o', 'name')).toBe('');
  }, 420_000);
});
