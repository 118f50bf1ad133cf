import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { serviceNodeOptions } from '@gw/local-stack';
import type { GatewayServiceName } from '@gw/local-stack';

// The Helm chart rendered offline (no cluster): lint, then every toggle of values.yaml checked on the output.

const repoRoot = join(__dirname, '..', '..');
const chartDir = join(repoRoot, 'charts', 'inference-gateway');
const namespace = 'gw';
const release = 'gw';
const prefix = `${release}-inference-gateway`;
const grpcServices = ['auth', 'policy', 'quota', 'router', 'metering'];
const allServices = ['ingress', ...grpcServices];
const secretEnvNames = [
  'ADMIN_TOKEN',
  'KEY_PEPPERS',
  'DATABASE_URL',
  'REDIS_URL',
  'KAFKA_BROKERS',
  'ANTHROPIC_API_KEY',
];
const monitoringApi = ['--api-versions', 'monitoring.coreos.com/v1'];
const devValues = ['-f', join(chartDir, 'values-dev.yaml')];
const productionValues = ['-f', join(chartDir, 'values-production.yaml')];
/** Every values file the chart ships, by name, as the arguments that give it to helm. */
const everyValuesFile: [string, string[]][] = [
  ['default values', []],
  ['values-dev.yaml', devValues],
  ['values-production.yaml', productionValues],
];

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}

interface Probe {
  grpc?: { port: number };
  tcpSocket?: { port: string };
  httpGet?: { path: string; port: string };
}

interface Container {
  name: string;
  image: string;
  env: EnvVar[];
  ports?: { name: string; containerPort: number }[];
  securityContext: {
    allowPrivilegeEscalation: boolean;
    readOnlyRootFilesystem: boolean;
    capabilities: { drop: string[] };
  };
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { sleep?: { seconds: number } } };
  volumeMounts: { name: string; mountPath: string }[];
  resources: { limits: { memory: string } };
}

interface PodSpec {
  containers: Container[];
  terminationGracePeriodSeconds?: number;
  securityContext: { runAsNonRoot: boolean; seccompProfile: { type: string } };
  topologySpreadConstraints?: { topologyKey: string }[];
  volumes: { name: string; secret?: { secretName: string } }[];
}

interface LabelSelector {
  matchLabels?: Record<string, string>;
}

interface NetworkPolicyRule {
  from?: { podSelector?: LabelSelector; namespaceSelector?: LabelSelector }[];
  ports: { port: string }[];
}

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  spec: {
    replicas?: number;
    clusterIP?: string;
    ports?: { name: string }[];
    template?: { metadata: { annotations?: Record<string, string> }; spec: PodSpec };
    volumeClaimTemplates?: { metadata: { name: string } }[];
    scaleTargetRef?: { kind: string; name: string };
    behavior?: {
      scaleDown: {
        stabilizationWindowSeconds: number;
        policies: { type: string; value: number; periodSeconds: number }[];
      };
    };
    backoffLimit?: number;
    ingress?: NetworkPolicyRule[];
    dnsNames?: string[];
    secretName?: string;
  };
  data?: Record<string, string>;
}

let helm = '';

beforeAll(() => {
  // Cached after the first run (test/run.sh installs it before the unit tests); prints the binary's path.
  helm = execFileSync('bash', [join(repoRoot, 'deploy', 'install-helm.sh')], { encoding: 'utf8' }).trim();
}, 120_000);

function helmRun(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(helm, args, { encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

function render(...args: string[]): Manifest[] {
  const run = helmRun(['template', release, chartDir, '--namespace', namespace, ...args]);
  if (run.status !== 0) throw new Error(`helm template failed: ${run.stderr}`);
  return (
    parseAllDocuments(run.stdout)
      .map((document) => document.toJS() as Manifest | null)
      .filter((manifest): manifest is Manifest => manifest !== null)
      // A ConfigMap has no spec; an empty one keeps every lookup below simple.
      .map((manifest) => ({ ...manifest, spec: manifest.spec ?? {} }))
  );
}

function renderFails(...args: string[]): string {
  const run = helmRun(['template', release, chartDir, '--namespace', namespace, ...args]);
  expect(run.status).not.toBe(0);
  return run.stderr;
}

function ofKind(manifests: Manifest[], kind: string): Manifest[] {
  return manifests.filter((manifest) => manifest.kind === kind);
}

function named(manifests: Manifest[], kind: string, name: string): Manifest {
  const found = manifests.find((manifest) => manifest.kind === kind && manifest.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in the rendered chart`);
  return found;
}

function workload(manifests: Manifest[], service: string): Manifest {
  return named(manifests, service === 'ingress' ? 'StatefulSet' : 'Deployment', `${prefix}-${service}`);
}

function podSpec(manifest: Manifest): PodSpec {
  if (!manifest.spec.template) throw new Error(`${manifest.kind} ${manifest.metadata.name} has no pod template`);
  return manifest.spec.template.spec;
}

function container(manifests: Manifest[], service: string): Container {
  const [first] = podSpec(workload(manifests, service)).containers;
  if (!first) throw new Error(`${service} has no container`);
  return first;
}

function envOf(manifests: Manifest[], service: string): Map<string, EnvVar> {
  return new Map(container(manifests, service).env.map((variable) => [variable.name, variable]));
}

function podTemplates(manifests: Manifest[]): Manifest[] {
  return manifests.filter((manifest) => manifest.spec.template !== undefined);
}

describe('helm lint --strict', () => {
  test.each(everyValuesFile)('passes with %s', (_name, args) => {
    const run = helmRun(['lint', '--strict', chartDir, ...args]);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});

describe('workloads and Services', () => {
  test('a Deployment and a headless Service per gRPC service; ingress a StatefulSet with a spool volume per pod', () => {
    const manifests = render();
    expect(ofKind(manifests, 'Deployment').map((manifest) => manifest.metadata.name)).toEqual(
      grpcServices.map((service) => `${prefix}-${service}`),
    );
    for (const service of grpcServices) {
      const headless = named(manifests, 'Service', `${prefix}-${service}`);
      expect(headless.spec.clusterIP).toBe('None');
      expect(headless.spec.ports?.map((port) => port.name)).toEqual(['grpc', 'metrics']);
    }
    const ingress = workload(manifests, 'ingress');
    expect(ingress.spec.volumeClaimTemplates?.map((claim) => claim.metadata.name)).toEqual(['usage-spool']);
    const spoolMount = container(manifests, 'ingress').volumeMounts.find((mount) => mount.name === 'usage-spool');
    expect(envOf(manifests, 'ingress').get('USAGE_SPOOL_DIR')?.value).toBe(spoolMount?.mountPath);
  });

  test('the public and the admin API have separate Services, each with its own port only', () => {
    const manifests = render();
    expect(named(manifests, 'Service', `${prefix}-ingress`).spec.ports?.map((port) => port.name)).toEqual(['http']);
    expect(named(manifests, 'Service', `${prefix}-ingress-admin`).spec.ports?.map((port) => port.name)).toEqual([
      'admin',
    ]);
  });

  test('ingress dials every gRPC service by dns:/// at a name its certificate carries', () => {
    const manifests = render();
    const env = envOf(manifests, 'ingress');
    for (const service of grpcServices) {
      const host = `${prefix}-${service}.${namespace}.svc.cluster.local`;
      const address = env.get(`${service.toUpperCase()}_ADDRESS`)?.value ?? '';
      expect(address).toMatch(new RegExp(`^dns:///${host.replace(/\./g, '\\.')}:\\d+$`));
      expect(named(manifests, 'Certificate', `${prefix}-${service}`).spec.dnsNames).toContain(host);
    }
  });

  test('images are inference-gateway/<service> with the registry prefix and tag', () => {
    expect(container(render(), 'router').image).toBe('inference-gateway/router:0.1.0');
    const manifests = render('--set', 'imageRegistry=registry.test/', '--set', 'auth.image.tag=abc');
    expect(container(manifests, 'auth').image).toBe('registry.test/inference-gateway/auth:abc');
  });
});

describe('memory', () => {
  const MiB = 1024 * 1024;
  /** A quantity of memory as the chart writes them (512Mi, 1Gi), in MiB. */
  function mebibytes(quantity: string): number {
    const [, amount, unit] = /^(\d+)(Mi|Gi)$/.exec(quantity) ?? [];
    if (!amount) throw new Error(`not a quantity in Mi or Gi: ${quantity}`);
    return Number(amount) * (unit === 'Gi' ? 1024 : 1);
  }

  test.each([
    ['default values', [], 96 * MiB],
    ['values-dev.yaml', devValues, 32 * MiB],
    ['values-production.yaml', productionValues, 96 * MiB],
  ])(
    '%s: ingress holds at most bodyBufferMaxBytes of bodies, and its limit has room for seven times that',
    (_name, args, expected) => {
      const manifests = render(...args);
      const held = Number(envOf(manifests, 'ingress').get('BODY_BUFFER_MAX_BYTES')?.value);
      expect(held).toBe(expected);
      expect(held).toBeGreaterThanOrEqual(Number(envOf(manifests, 'ingress').get('BODY_LIMIT_BYTES')?.value));
      const limit = mebibytes(container(manifests, 'ingress').resources.limits.memory);
      expect(limit).toBeGreaterThanOrEqual((7 * held) / MiB + 256);
    },
  );

  test("each service's NODE_OPTIONS are the local stack's and its image's by default, and replaced or dropped per service", () => {
    const manifests = render();
    for (const service of allServices) {
      expect(envOf(manifests, service).get('NODE_OPTIONS')?.value).toBe(
        serviceNodeOptions[service as GatewayServiceName],
      );
    }
    const changed = render('--set', 'router.nodeOptions=--max-semi-space-size=32', '--set', 'auth.nodeOptions=');
    expect(envOf(changed, 'router').get('NODE_OPTIONS')?.value).toBe('--max-semi-space-size=32');
    expect(envOf(changed, 'auth').has('NODE_OPTIONS')).toBe(false);
  });

  test('a bodyBufferMaxBytes below bodyLimitBytes is refused: the largest body could never be held', () => {
    expect(renderFails('--set', 'ingress.bodyBufferMaxBytes=1048576')).toContain(
      'ingress.bodyBufferMaxBytes must be at least ingress.bodyLimitBytes',
    );
  });

  test.each(everyValuesFile)("%s: the router's limit has room for six times the bodies it may hold", (_name, args) => {
    const manifests = render(...args);
    // The router's own default, 96 MiB, unless the values set it.
    const held = Number(envOf(manifests, 'router').get('BODY_BUFFER_MAX_BYTES')?.value ?? 96 * MiB);
    expect(mebibytes(container(manifests, 'router').resources.limits.memory)).toBeGreaterThanOrEqual(
      (6 * held) / MiB + 256,
    );
  });

  test.each(everyValuesFile)(
    "%s: policy's limit has room for every privacy thread busy on a body of the largest size",
    (_name, args) => {
      const manifests = render(...args);
      const env = envOf(manifests, 'policy');
      const threads = Number(env.get('PRIVACY_WORKERS')?.value ?? 2);
      // About 70 MB at rest, and up to about 600 MB for each thread redacting a body of the largest size.
      expect(mebibytes(container(manifests, 'policy').resources.limits.memory)).toBeGreaterThanOrEqual(
        70 + threads * 600,
      );
    },
  );
});

describe('pod security and placement', () => {
  test.each(everyValuesFile)(
    'every pod runs non-root, read-only, unprivileged, seccomp RuntimeDefault, no capability (%s)',
    (_name, args) => {
      const templates = podTemplates(render(...args));
      // Six services, the migrations Job and the topic Job.
      expect(templates).toHaveLength(8);
      for (const manifest of templates) {
        const spec = podSpec(manifest);
        expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
        for (const each of spec.containers) {
          expect(each.securityContext).toMatchObject({
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          });
        }
      }
    },
  );

  test('pods spread over zones and nodes unless turned off', () => {
    for (const service of allServices) {
      const constraints = podSpec(workload(render(), service)).topologySpreadConstraints ?? [];
      expect(constraints.map((constraint) => constraint.topologyKey)).toEqual([
        'topology.kubernetes.io/zone',
        'kubernetes.io/hostname',
      ]);
    }
    expect(podSpec(workload(render(...devValues), 'auth')).topologySpreadConstraints).toBeUndefined();
  });
});

describe('probes', () => {
  test('plaintext gRPC: native gRPC startup, liveness and readiness probes on the gRPC port', () => {
    const manifests = render('--set', 'grpc.insecure=true');
    for (const service of grpcServices) {
      const each = container(manifests, service);
      const port = Number(envOf(manifests, service).get('GRPC_PORT')?.value);
      for (const probe of [each.startupProbe, each.livenessProbe, each.readinessProbe]) {
        expect(probe?.grpc).toEqual({ port });
      }
    }
  });

  test('mutual TLS: native gRPC probes on the plaintext health-only port the services open', () => {
    const manifests = render();
    for (const service of grpcServices) {
      const each = container(manifests, service);
      const env = envOf(manifests, service);
      const healthPort = Number(env.get('GRPC_HEALTH_PORT')?.value);
      expect(healthPort).toBe(8086);
      expect(healthPort).not.toBe(Number(env.get('GRPC_PORT')?.value));
      expect(each.ports).toContainEqual({ name: 'health', containerPort: healthPort });
      for (const probe of [each.startupProbe, each.livenessProbe, each.readinessProbe]) {
        expect(probe?.grpc).toEqual({ port: healthPort });
        expect(probe?.tcpSocket).toBeUndefined();
      }
    }
    const plaintext = render('--set', 'grpc.insecure=true');
    expect(envOf(plaintext, 'quota').has('GRPC_HEALTH_PORT')).toBe(false);
    expect(container(plaintext, 'quota').ports?.map((port) => port.name)).not.toContain('health');
  });

  test('ingress: HTTP /healthz (alive) and /readyz (ready) on the public port', () => {
    const each = container(render(), 'ingress');
    for (const probe of [each.startupProbe, each.livenessProbe]) {
      expect(probe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    }
    expect(each.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
  });
});

describe('secrets by reference only', () => {
  test.each([
    ['default values', []],
    ['values-production.yaml', productionValues],
  ])('no Secret object, and every secret variable comes from a secretKeyRef (%s)', (_name, args) => {
    const manifests = render(...args);
    expect(ofKind(manifests, 'Secret')).toEqual([]);
    for (const manifest of podTemplates(manifests)) {
      for (const variable of podSpec(manifest).containers.flatMap((each) => each.env)) {
        if (!secretEnvNames.includes(variable.name)) continue;
        expect(variable.value).toBeUndefined();
        expect(variable.valueFrom?.secretKeyRef).toBeDefined();
      }
    }
  });

  test('each service gets exactly the secrets it needs, from the named Secret and keys', () => {
    const manifests = render('--set', 'secrets.existingSecret=gw-secrets', '--set', 'secrets.keys.databaseUrl=pg-url');
    const secretRefs = (service: string) =>
      container(manifests, service)
        .env.filter((variable) => variable.valueFrom?.secretKeyRef)
        .map((variable) => [
          variable.name,
          variable.valueFrom?.secretKeyRef?.name,
          variable.valueFrom?.secretKeyRef?.key,
        ]);
    expect(secretRefs('ingress')).toEqual([
      ['ADMIN_TOKEN', 'gw-secrets', 'ADMIN_TOKEN'],
      ['REDIS_URL', 'gw-secrets', 'REDIS_URL'],
      ['KAFKA_BROKERS', 'gw-secrets', 'KAFKA_BROKERS'],
    ]);
    expect(secretRefs('auth')).toEqual([
      ['DATABASE_URL', 'gw-secrets', 'pg-url'],
      ['REDIS_URL', 'gw-secrets', 'REDIS_URL'],
      ['KEY_PEPPERS', 'gw-secrets', 'KEY_PEPPERS'],
    ]);
    expect(secretRefs('policy')).toEqual([]);
    expect(secretRefs('quota')).toEqual([
      ['DATABASE_URL', 'gw-secrets', 'pg-url'],
      ['REDIS_URL', 'gw-secrets', 'REDIS_URL'],
    ]);
    expect(secretRefs('metering')).toEqual([
      ['DATABASE_URL', 'gw-secrets', 'pg-url'],
      ['KAFKA_BROKERS', 'gw-secrets', 'KAFKA_BROKERS'],
    ]);
    expect(secretRefs('router')).toEqual([['ANTHROPIC_API_KEY', 'gw-secrets', 'ANTHROPIC_API_KEY']]);
  });

  test('upstream credentials come from their own Secret when one is named', () => {
    const ref = envOf(render(...productionValues), 'router').get('ANTHROPIC_API_KEY')?.valueFrom?.secretKeyRef;
    expect(ref).toEqual({ name: 'inference-gateway-upstreams', key: 'ANTHROPIC_API_KEY' });
  });

  test('the migration Job is a pre-install and pre-upgrade hook with DATABASE_URL from the Secret', () => {
    const job = named(render(), 'Job', `${prefix}-migrations`);
    expect(job.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    expect(podSpec(job).containers.map((each) => each.env)).toEqual([
      [{ name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'inference-gateway', key: 'DATABASE_URL' } } }],
    ]);
    expect(
      ofKind(render('--set', 'migrations.enabled=false'), 'Job').map((manifest) => manifest.metadata.name),
    ).toEqual([`${prefix}-kafka-topics`]);
  });
});

describe('gRPC transport', () => {
  test('mutual TLS by default: a cert-manager Certificate per service, mounted, and the TLS variables', () => {
    const manifests = render();
    expect(ofKind(manifests, 'Certificate').map((manifest) => manifest.metadata.name)).toEqual(
      allServices.map((service) => `${prefix}-${service}`),
    );
    for (const service of allServices) {
      const env = envOf(manifests, service);
      expect(env.get('GRPC_TLS_CA')?.value).toBe('/etc/gateway/tls/ca.crt');
      expect(env.has('GRPC_INSECURE')).toBe(false);
      const volume = podSpec(workload(manifests, service)).volumes.find((each) => each.name === 'grpc-tls');
      expect(volume?.secret?.secretName).toBe(`${prefix}-${service}-tls`);
    }
  });

  test('a provided TLS Secret replaces the Certificates', () => {
    const manifests = render('--set', 'grpc.tls.source=existingSecret', '--set', 'grpc.tls.existingSecret=grpc-tls');
    expect(ofKind(manifests, 'Certificate')).toEqual([]);
    const volume = podSpec(workload(manifests, 'router')).volumes.find((each) => each.name === 'grpc-tls');
    expect(volume?.secret?.secretName).toBe('grpc-tls');
  });

  test('plaintext only with grpc.insecure: true', () => {
    const manifests = render(...devValues);
    expect(ofKind(manifests, 'Certificate')).toEqual([]);
    for (const service of allServices) {
      const env = envOf(manifests, service);
      expect(env.get('GRPC_INSECURE')?.value).toBe('true');
      expect(env.has('GRPC_TLS_CERT')).toBe(false);
    }
  });

  test('mutual TLS without a source of certificates is refused', () => {
    expect(renderFails('--set', 'grpc.tls.certManager.issuerName=')).toContain('grpc.tls.certManager.issuerName');
    expect(renderFails('--set', 'grpc.tls.source=existingSecret')).toContain('grpc.tls.existingSecret');
  });
});

describe('autoscaling and disruption budgets', () => {
  test('default: a PodDisruptionBudget per service, no HorizontalPodAutoscaler, fixed replicas', () => {
    const manifests = render();
    expect(ofKind(manifests, 'PodDisruptionBudget')).toHaveLength(6);
    expect(ofKind(manifests, 'HorizontalPodAutoscaler')).toEqual([]);
    for (const service of allServices) expect(workload(manifests, service).spec.replicas).toBe(2);
  });

  test('an autoscaled workload leaves its replicas to the HorizontalPodAutoscaler', () => {
    const manifests = render(...productionValues);
    const targets = ofKind(manifests, 'HorizontalPodAutoscaler').map((manifest) => manifest.spec.scaleTargetRef);
    expect(targets).toEqual([
      { apiVersion: 'apps/v1', kind: 'StatefulSet', name: `${prefix}-ingress` },
      ...['auth', 'policy', 'quota', 'router'].map((service) => ({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: `${prefix}-${service}`,
      })),
    ]);
    expect(workload(manifests, 'ingress').spec.replicas).toBeUndefined();
    expect(workload(manifests, 'metering').spec.replicas).toBe(3);
  });

  test('budgets are turned off per service', () => {
    expect(ofKind(render(...devValues), 'PodDisruptionBudget')).toEqual([]);
    const names = ofKind(render('--set', 'router.pdb.enabled=false'), 'PodDisruptionBudget').map(
      (manifest) => manifest.metadata.name,
    );
    expect(names).not.toContain(`${prefix}-router`);
    expect(names).toHaveLength(5);
  });
});

describe('graceful stops', () => {
  test('ingress and router pause before SIGTERM and have the grace their streams and the spool need', () => {
    const manifests = render();
    const ingress = podSpec(workload(manifests, 'ingress'));
    expect(ingress.terminationGracePeriodSeconds).toBe(5 + 300 + 60 + 10);
    expect(container(manifests, 'ingress').lifecycle).toEqual({ preStop: { sleep: { seconds: 5 } } });
    expect(envOf(manifests, 'ingress').get('SHUTDOWN_GRACE_MS')?.value).toBe('300000');
    expect(envOf(manifests, 'ingress').get('USAGE_SPOOL_DRAIN_MS')?.value).toBe('60000');
    expect(podSpec(workload(manifests, 'router')).terminationGracePeriodSeconds).toBe(5 + 300 + 10);
    expect(container(manifests, 'router').lifecycle).toEqual({ preStop: { sleep: { seconds: 5 } } });
    expect(envOf(manifests, 'router').get('SHUTDOWN_GRACE_MS')?.value).toBe('300000');
    // Unary calls only: the Kubernetes default of 30 s is plenty; the pause before SIGTERM is the same.
    for (const service of ['auth', 'policy', 'quota', 'metering']) {
      expect(podSpec(workload(manifests, service)).terminationGracePeriodSeconds).toBeUndefined();
      expect(envOf(manifests, service).has('SHUTDOWN_GRACE_MS')).toBe(false);
      expect(container(manifests, service).lifecycle).toEqual({ preStop: { sleep: { seconds: 5 } } });
    }
  });

  test('the graces are set per service, and a zero pause leaves no preStop', () => {
    const manifests = render(
      '--set',
      'router.shutdown.graceSeconds=900',
      '--set',
      'ingress.shutdown.preStopSeconds=0',
      '--set',
      'ingress.spool.drainOnStopSeconds=0',
    );
    expect(envOf(manifests, 'router').get('SHUTDOWN_GRACE_MS')?.value).toBe('900000');
    expect(podSpec(workload(manifests, 'router')).terminationGracePeriodSeconds).toBe(915);
    expect(container(manifests, 'ingress').lifecycle).toBeUndefined();
    expect(podSpec(workload(manifests, 'ingress')).terminationGracePeriodSeconds).toBe(310);
    expect(envOf(manifests, 'ingress').get('USAGE_SPOOL_DRAIN_MS')?.value).toBe('0');
  });

  test("ingress's autoscaler scales in one pod at a time, slower than a pod drains", () => {
    const manifests = render(...productionValues);
    const hpa = named(manifests, 'HorizontalPodAutoscaler', `${prefix}-ingress`);
    const grace = podSpec(workload(manifests, 'ingress')).terminationGracePeriodSeconds ?? 0;
    expect(hpa.spec.behavior?.scaleDown.stabilizationWindowSeconds).toBeGreaterThanOrEqual(600);
    expect(hpa.spec.behavior?.scaleDown.policies).toEqual([{ type: 'Pods', value: 1, periodSeconds: 600 }]);
    expect(600).toBeGreaterThan(grace);
    // The other autoscalers keep Kubernetes's default behaviour.
    expect(named(manifests, 'HorizontalPodAutoscaler', `${prefix}-router`).spec.behavior).toBeUndefined();
  });
});

describe('spool sweeper', () => {
  test('a CronJob with the least rights starts drain Jobs of the ingress image on the Kafka settings of the services', () => {
    const manifests = render();
    const role = named(manifests, 'Role', `${prefix}-spool-sweeper`) as unknown as {
      rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    };
    expect(role.rules.flatMap((rule) => rule.verbs).sort()).toEqual(['create', 'get', 'list', 'list']);
    const cronJob = named(manifests, 'CronJob', `${prefix}-spool-sweeper`) as unknown as {
      spec: { jobTemplate: { spec: { template: { spec: PodSpec & { serviceAccountName: string } } } } };
    };
    const sweeperPod = cronJob.spec.jobTemplate.spec.template.spec;
    expect(sweeperPod.serviceAccountName).toBe(`${prefix}-spool-sweeper`);
    expect(sweeperPod.containers[0]!.image).toBe(container(manifests, 'ingress').image);
    expect(sweeperPod.containers[0]!.securityContext).toMatchObject({ readOnlyRootFilesystem: true });

    const configMap = named(manifests, 'ConfigMap', `${prefix}-spool-sweeper`);
    const drainJob = JSON.parse(configMap.data!['drain-job.json']!) as { spec: { template: { spec: PodSpec } } };
    const drain = drainJob.spec.template.spec.containers[0]!;
    const env = new Map(drain.env.map((variable) => [variable.name, variable]));
    const ingressEnv = envOf(manifests, 'ingress');
    for (const name of ['KAFKA_BROKERS', 'USAGE_TOPIC']) expect(env.get(name)).toEqual(ingressEnv.get(name));
    expect(drain.volumeMounts.find((mount) => mount.name === 'usage-spool')?.mountPath).toBe('/var/lib/gateway/spool');
    expect(ofKind(render('--set', 'ingress.spoolSweeper.enabled=false'), 'CronJob')).toEqual([]);
  });
});

describe('Kafka usage topic', () => {
  test('a hook Job creates or checks the topic with the connection settings of the services', () => {
    const manifests = render(...devValues);
    const job = named(manifests, 'Job', `${prefix}-kafka-topics`);
    expect(job.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    const [topicContainer] = podSpec(job).containers;
    const env = new Map(topicContainer!.env.map((variable) => [variable.name, variable]));
    const metering = envOf(manifests, 'metering');
    for (const name of ['KAFKA_BROKERS', 'USAGE_TOPIC']) expect(env.get(name)).toEqual(metering.get(name));
    expect(topicContainer!.image).toBe(container(manifests, 'metering').image);
    expect(ofKind(render('--set', 'kafka.topicJob.enabled=false'), 'Job').map((m) => m.metadata.name)).not.toContain(
      `${prefix}-kafka-topics`,
    );
  });
});

describe('NetworkPolicy', () => {
  const ingressPods = { matchLabels: { 'app.kubernetes.io/name': 'ingress', 'app.kubernetes.io/instance': release } };

  test('only ingress reaches the gRPC ports', () => {
    const manifests = render();
    for (const service of grpcServices) {
      const rules = named(manifests, 'NetworkPolicy', `${prefix}-${service}`).spec.ingress ?? [];
      const grpcRules = rules.filter((rule) => rule.ports.some((port) => port.port === 'grpc'));
      expect(grpcRules).toEqual([{ from: [{ podSelector: ingressPods }], ports: [{ port: 'grpc', protocol: 'TCP' }] }]);
      expect(rules.flatMap((rule) => rule.ports.map((port) => port.port)).sort()).toEqual(['grpc', 'metrics']);
    }
  });

  test('the admin port is closed while no admin peer is configured', () => {
    const rules = named(render(), 'NetworkPolicy', `${prefix}-ingress`).spec.ingress ?? [];
    const ports = rules.flatMap((rule) => rule.ports.map((port) => port.port));
    expect(ports).toEqual(['http', 'metrics']);
    expect(rules.find((rule) => rule.ports.some((port) => port.port === 'http'))?.from).toBeUndefined();
  });

  test('the admin port opens to the configured namespace and pods only', () => {
    const rules = named(render(...productionValues), 'NetworkPolicy', `${prefix}-ingress`).spec.ingress ?? [];
    expect(rules.filter((rule) => rule.ports.some((port) => port.port === 'admin'))).toEqual([
      {
        from: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'operations' } },
            podSelector: { matchLabels: { 'app.kubernetes.io/name': 'gateway-admin-proxy' } },
          },
        ],
        ports: [{ port: 'admin', protocol: 'TCP' }],
      },
    ]);
  });

  test('turned off, none is rendered', () => {
    expect(ofKind(render('--set', 'networkPolicy.enabled=false'), 'NetworkPolicy')).toEqual([]);
  });
});

describe('Prometheus Operator resources', () => {
  const bothOn = [
    '--set',
    'monitoring.serviceMonitor.enabled=true',
    '--set',
    'monitoring.prometheusRule.enabled=true',
    '--set',
    'monitoring.prometheusRule.runbookBaseUrl=https://runbooks.example.com/',
  ];

  test('rendered with the toggles on and monitoring.coreos.com/v1 served', () => {
    const manifests = render(...bothOn, ...monitoringApi);
    expect(ofKind(manifests, 'ServiceMonitor')).toHaveLength(6);
    expect(ofKind(manifests, 'PrometheusRule')).toHaveLength(1);
  });

  test.each([
    ['the toggles on, the API not served', bothOn],
    ['the API served, the toggles off', monitoringApi],
  ])('absent with %s', (_name, args) => {
    const manifests = render(...args);
    expect(ofKind(manifests, 'ServiceMonitor')).toEqual([]);
    expect(ofKind(manifests, 'PrometheusRule')).toEqual([]);
  });

  test('every ServiceMonitor finds a Service with a metrics port', () => {
    const manifests = render(...productionValues, ...monitoringApi);
    const servicesWithMetrics = ofKind(manifests, 'Service').filter((service) =>
      service.spec.ports?.some((port) => port.name === 'metrics'),
    );
    expect(servicesWithMetrics.map((service) => service.metadata.name).sort()).toEqual(
      [...grpcServices.map((service) => `${prefix}-${service}`), `${prefix}-ingress-pods`].sort(),
    );
  });
});

describe('gateway YAML and OTLP', () => {
  let workDir = '';
  beforeAll(() => {
    workDir = mkdtempSync(join(tmpdir(), 'gw-chart-'));
  });
  afterAll(() => rmSync(workDir, { recursive: true, force: true }));

  function checksums(manifests: Manifest[]): Set<string | undefined> {
    return new Set(
      podTemplates(manifests)
        .filter((manifest) => manifest.kind !== 'Job')
        .map((manifest) => manifest.spec.template?.metadata.annotations?.['checksum/gateway-config']),
    );
  }

  function editedConfig(): string {
    const changed = join(workDir, 'changed.yaml');
    const defaults = parse(readFileSync(join(chartDir, 'values.yaml'), 'utf8')) as { gatewayConfig: string };
    writeFileSync(
      changed,
      `gatewayConfig: |\n  ${defaults.gatewayConfig.trimEnd().split('\n').join('\n  ')}\n  # edited\n`,
    );
    return changed;
  }

  test('by default a config change leaves every pod template as it was: the services reload the mounted file', () => {
    const changed = editedConfig();
    const podsOf = (manifests: Manifest[]) =>
      JSON.stringify(podTemplates(manifests).filter((manifest) => manifest.kind !== 'Job'));
    expect(checksums(render())).toEqual(new Set([undefined]));
    expect(podsOf(render('-f', changed))).toBe(podsOf(render()));
    expect(named(render('-f', changed), 'ConfigMap', `${prefix}-config`).data?.['gateway.yaml']).toContain('# edited');
  });

  test('with gatewayConfigRollout restart every pod carries the config checksum, which changes with the config and only then', () => {
    const changed = editedConfig();
    const restart = ['--set', 'gatewayConfigRollout=restart'];
    const before = checksums(render(...restart));
    const after = checksums(render(...restart, '-f', changed));
    expect(before.size).toBe(1);
    expect([...before][0]).toMatch(/^[0-9a-f]{64}$/);
    expect(after.size).toBe(1);
    expect([...after][0]).not.toBe([...before][0]);
    expect(checksums(render(...restart, '--set', 'logLevel=debug'))).toEqual(before);
  });

  test('OTLP settings reach every service only when an endpoint is set', () => {
    for (const service of allServices) expect(envOf(render(), service).has('OTEL_EXPORTER_OTLP_ENDPOINT')).toBe(false);
    const manifests = render(...productionValues);
    for (const service of allServices) {
      const env = envOf(manifests, service);
      expect(env.get('OTEL_EXPORTER_OTLP_ENDPOINT')?.value).toBe('http://otel-collector.observability.svc:4318');
      expect(env.get('OTEL_SERVICE_NAME')?.value).toBe(`gateway-${service}`);
      expect(env.get('OTEL_RESOURCE_ATTRIBUTES')?.value).toBe('deployment.environment=production');
    }
  });
});

describe('Kubernetes schemas (kubeconform, strict)', () => {
  let kubeconform = '';
  let schemaDir = '';
  let crdSchemaDir = '';
  beforeAll(() => {
    // Cached after the first run (test/run.sh installs it before the unit tests); prints binary and schemas.
    const installed = execFileSync('bash', [join(repoRoot, 'deploy', 'install-kubeconform.sh')], { encoding: 'utf8' });
    [kubeconform = '', schemaDir = '', crdSchemaDir = ''] = installed.trim().split('\n');
  }, 600_000);

  test.each(everyValuesFile)('every rendered object of Kubernetes 1.37 and its CRDs is valid (%s)', (_name, args) => {
    const rendered = helmRun(['template', release, chartDir, '--namespace', namespace, ...monitoringApi, ...args]);
    expect(rendered.status).toBe(0);
    // cert-manager, Prometheus Operator and Gateway API kinds against the schemas of their CRDs.
    const run = spawnSync(
      kubeconform,
      [
        '-strict',
        '-summary',
        '-schema-location',
        `${schemaDir}/{{ .ResourceKind }}{{ .KindSuffix }}.json`,
        '-schema-location',
        `${crdSchemaDir}/{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json`,
        '-',
      ],
      { input: rendered.stdout, encoding: 'utf8' },
    );
    expect(run.stdout).toMatch(/Valid: [1-9]\d*, Invalid: 0, Errors: 0/);
    expect(run.status).toBe(0);
  });
});

describe('values.schema.json', () => {
  test.each([
    [['--set', 'auth.replicas=0'], "at '/auth/replicas': minimum: got 0, want 1"],
    [['--set', 'grpc.insecure=yes'], "at '/grpc/insecure': got string, want boolean"],
    [['--set', 'ingress.replicaz=2'], "additional properties 'replicaz' not allowed"],
    [['--set', 'secrets.existingSecret='], "at '/secrets/existingSecret'"],
    [['--set', 'networkPolicy.admin.podSelector.role=1'], "at '/networkPolicy/admin/podSelector/role'"],
  ])('%j fails with the schema message', (args, message) => {
    expect(renderFails(...args)).toContain(message);
  });
});

describe('README.md', () => {
  // A map is one value when it is Kubernetes's own shape, documented as a whole.
  const wholeValues = new Set(['resources', 'podSecurityContext', 'containerSecurityContext']);

  function leafKeys(value: unknown, path: string[] = []): string[] {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || wholeValues.has(path.at(-1) ?? '')) {
      return [path.join('.')];
    }
    const entries = Object.entries(value);
    if (entries.length === 0) return [path.join('.')];
    return entries.flatMap(([key, child]) => leafKeys(child, [...path, key]));
  }

  test('its table lists every value of values.yaml, and nothing else', () => {
    const values: unknown = parse(readFileSync(join(chartDir, 'values.yaml'), 'utf8'));
    const readme = readFileSync(join(chartDir, 'README.md'), 'utf8');
    const documented = [...readme.matchAll(/^\| `([A-Za-z0-9.]+)` +\|/gm)].map((match) => match[1]);
    expect(documented.sort()).toEqual(leafKeys(values).sort());
  });
});
