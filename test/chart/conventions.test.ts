import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import {
  allServices,
  chartDir,
  envOf,
  helmRun,
  mainContainer,
  monitoringApi,
  named,
  namespace,
  ofKind,
  podSpec,
  pods,
  prefix,
  release,
  render,
  renderChart,
  renderFails,
  workload,
} from './helm';

// The conventions a platform team expects of a chart: usable as a subchart, the usual extension points, a
// ServiceAccount per component, a configurable security context, labels, `helm test` and NOTES.txt.

let workDir = '';
beforeAll(() => {
  workDir = mkdtempSync(join(tmpdir(), 'gw-chart-conventions-'));
});
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

function valuesFile(name: string, values: unknown): string {
  const file = join(workDir, name);
  writeFileSync(file, stringify(values));
  return file;
}

const digest = `sha256:${'0123456789abcdef'.repeat(4)}`;

/** Every extension point of a component, set to something recognisable. */
function extensions(service: string) {
  return {
    image: { digest },
    podAnnotations: { 'example.com/annotated': service },
    podLabels: { 'example.com/labelled': service },
    nodeSelector: { 'example.com/pool': 'gateway' },
    tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gateway', effect: 'NoSchedule' }],
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'example.com/gpu', operator: 'DoesNotExist' }] }],
        },
      },
    },
    priorityClassName: 'gateway-critical',
    serviceAccount: { annotations: { 'eks.amazonaws.com/role-arn': `arn:aws:iam::123456789012:role/gw-${service}` } },
    extraEnvVars: [
      { name: 'AWS_REGION', value: 'eu-west-2' },
      { name: 'FROM_SECRET', valueFrom: { secretKeyRef: { name: 'extra', key: 'value' } } },
    ],
    extraVolumes: [{ name: 'extra-config', configMap: { name: 'extra-config' } }],
    extraVolumeMounts: [{ name: 'extra-config', mountPath: '/etc/extra', readOnly: true }],
    sidecars: [{ name: 'log-shipper', image: 'registry.example.com/shipper:1' }],
    initContainers: [{ name: 'wait-for-proxy', image: 'registry.example.com/wait:1' }],
  };
}

describe('as a subchart of an umbrella chart', () => {
  function umbrella(): string {
    const dir = join(workDir, 'platform');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(join(dir, 'charts'), { recursive: true });
    mkdirSync(join(dir, 'templates'));
    // An object of the umbrella's own, reading a global the gateway does not know.
    writeFileSync(
      join(dir, 'templates', 'configmap.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform\n  labels:\n    app.kubernetes.io/component: platform\n' +
        'data:\n  storageClass: {{ .Values.global.storageClass | quote }}\n',
    );
    cpSync(chartDir, join(dir, 'charts', 'inference-gateway'), { recursive: true });
    writeFileSync(
      join(dir, 'Chart.yaml'),
      stringify({
        apiVersion: 'v2',
        name: 'platform',
        version: '1.0.0',
        dependencies: [{ name: 'inference-gateway', version: '0.1.0' }],
      }),
    );
    writeFileSync(
      join(dir, 'values.yaml'),
      stringify({
        // Globals of the umbrella: the gateway reads its two, the others are the umbrella's own.
        global: {
          imageRegistry: 'mirror.example.com/',
          imagePullSecrets: ['mirror-credentials'],
          storageClass: 'fast',
          postgresql: { auth: { existingSecret: 'pg' } },
        },
        'inference-gateway': { commonLabels: { 'example.com/team': 'platform' } },
      }),
    );
    return dir;
  }

  test('helm lint --strict passes and the globals reach every pod', () => {
    const dir = umbrella();
    const lint = helmRun(['lint', '--strict', dir]);
    expect(lint.stderr).toBe('');
    expect(lint.status).toBe(0);
    const manifests = renderChart(dir, []);
    const everyPod = pods(manifests);
    // Six workloads, the migration Job, the Kafka topic Job and the `helm test` Pod.
    expect(everyPod).toHaveLength(9);
    for (const spec of everyPod) {
      expect(spec.imagePullSecrets).toEqual([{ name: 'mirror-credentials' }]);
      for (const each of spec.containers) expect(each.image).toMatch(/^mirror\.example\.com\/inference-gateway\//);
    }
    expect(named(manifests, 'ConfigMap', 'platform').data).toEqual({ storageClass: 'fast' });
    for (const manifest of manifests) {
      if (manifest.kind === 'Pod' || manifest.metadata.name === 'platform') continue;
      expect(manifest.metadata.labels?.['example.com/team']).toBe('platform');
    }
  });

  test('the chart on its own takes global values it does not know', () => {
    expect(() => render('--set', 'global.anything.nested=1', '--set', 'global.storageClass=fast')).not.toThrow();
  });

  test('global.imageRegistry wins over imageRegistry; pull secrets of both are listed once each', () => {
    const manifests = render(
      '--set',
      'imageRegistry=own.example.com/',
      '--set',
      'global.imageRegistry=umbrella.example.com/',
      '--set',
      'imagePullSecrets={own,shared}',
      '--set',
      'global.imagePullSecrets={shared,umbrella}',
    );
    expect(mainContainer(manifests, 'auth').image).toBe('umbrella.example.com/inference-gateway/auth:0.1.0');
    expect(podSpec(workload(manifests, 'auth')).imagePullSecrets).toEqual([
      { name: 'own' },
      { name: 'shared' },
      { name: 'umbrella' },
    ]);
  });
});

describe('extension points of every component', () => {
  test.each(allServices)('%s: every extension point is rendered where Kubernetes reads it', (service) => {
    const file = valuesFile(`${service}-extensions.yaml`, { [service]: extensions(service) });
    const manifests = render('-f', file);
    const manifest = workload(manifests, service);
    const spec = podSpec(manifest);
    const wanted = extensions(service);
    expect(manifest.spec.template?.metadata.annotations).toMatchObject(wanted.podAnnotations);
    expect(manifest.spec.template?.metadata.labels).toMatchObject(wanted.podLabels);
    // Selectors stay as they were: an upgrade can never change them.
    expect(manifest.spec.selector).toEqual({
      matchLabels: { 'app.kubernetes.io/name': service, 'app.kubernetes.io/instance': release },
    });
    expect(spec.nodeSelector).toEqual(wanted.nodeSelector);
    expect(spec.tolerations).toEqual(wanted.tolerations);
    expect(spec.affinity).toEqual(wanted.affinity);
    expect(spec.priorityClassName).toBe('gateway-critical');
    expect(spec.initContainers).toEqual(wanted.initContainers);
    expect(spec.containers.map((each) => each.name)).toEqual([service, 'log-shipper']);
    expect(spec.volumes).toContainEqual(wanted.extraVolumes[0]);
    const main = mainContainer(manifests, service);
    expect(main.image).toBe(`inference-gateway/${service}@${digest}`);
    expect(main.volumeMounts).toContainEqual(wanted.extraVolumeMounts[0]);
    // After the chart's own variables, so that one of them can be overridden.
    expect(main.env?.slice(-2)).toEqual(wanted.extraEnvVars);
    const account = named(manifests, 'ServiceAccount', `${prefix}-${service}`);
    expect(spec.serviceAccountName).toBe(`${prefix}-${service}`);
    expect(account.metadata.annotations).toEqual(wanted.serviceAccount.annotations);
    // Other components are untouched.
    const other = service === 'auth' ? 'quota' : 'auth';
    expect(podSpec(workload(manifests, other)).nodeSelector).toBeUndefined();
  });

  test('a ServiceAccount per component, without an API token; one named instead of created is used as is', () => {
    const manifests = render();
    // One per component, and the spool sweeper's (the only one that talks to the Kubernetes API).
    expect(ofKind(manifests, 'ServiceAccount').map((each) => each.metadata.name)).toEqual([
      ...allServices.map((service) => `${prefix}-${service}`),
      `${prefix}-spool-sweeper`,
    ]);
    for (const account of ofKind(manifests, 'ServiceAccount')) expect(account.automountServiceAccountToken).toBe(false);
    for (const service of allServices) {
      expect(podSpec(workload(manifests, service)).automountServiceAccountToken).toBe(false);
    }
    const shared = render(
      '--set',
      'router.serviceAccount.create=false',
      '--set',
      'router.serviceAccount.name=gw-egress',
    );
    expect(ofKind(shared, 'ServiceAccount').map((each) => each.metadata.name)).not.toContain(`${prefix}-router`);
    expect(podSpec(workload(shared, 'router')).serviceAccountName).toBe('gw-egress');
    const none = render('--set', 'auth.serviceAccount.create=false');
    expect(podSpec(workload(none, 'auth')).serviceAccountName).toBe('default');
  });

  test('a migration image by digest', () => {
    const job = named(render('--set', `migrations.image.digest=${digest}`), 'Job', `${prefix}-migrations`);
    expect(podSpec(job).containers[0]?.image).toBe(`inference-gateway/auth@${digest}`);
  });
});

describe("the Helm hooks' pods", () => {
  const hookPods = (manifests: ReturnType<typeof render>) => [
    named(manifests, 'Job', `${prefix}-migrations`),
    named(manifests, 'Job', `${prefix}-kafka-topics`),
    named(manifests, 'Pod', `${prefix}-ingress-test`),
  ];
  const metadataOf = (manifest: ReturnType<typeof render>[number]) =>
    manifest.kind === 'Pod' ? manifest.metadata : manifest.spec.template!.metadata;

  test('the migration and topic Jobs and the helm test Pod take the placement and metadata of hooks', () => {
    const wanted = extensions('hooks');
    const hooks = {
      podAnnotations: { 'sidecar.istio.io/inject': 'false' },
      podLabels: wanted.podLabels,
      nodeSelector: wanted.nodeSelector,
      tolerations: wanted.tolerations,
      affinity: wanted.affinity,
      priorityClassName: 'gateway-hooks',
    };
    const manifests = render('-f', valuesFile('hooks.yaml', { hooks }));
    for (const manifest of hookPods(manifests)) {
      const spec = podSpec(manifest);
      expect({ name: manifest.metadata.name, placement: spec }).toMatchObject({
        name: manifest.metadata.name,
        placement: {
          nodeSelector: hooks.nodeSelector,
          tolerations: hooks.tolerations,
          affinity: hooks.affinity,
          priorityClassName: 'gateway-hooks',
        },
      });
      expect(metadataOf(manifest).annotations).toMatchObject(hooks.podAnnotations);
      expect(metadataOf(manifest).labels).toMatchObject(hooks.podLabels);
    }
    // The services' pods keep their own placement.
    expect(podSpec(workload(manifests, 'auth')).nodeSelector).toBeUndefined();
  });

  test('by default they carry none of it', () => {
    for (const manifest of hookPods(render())) {
      const spec = podSpec(manifest);
      expect([spec.nodeSelector, spec.tolerations, spec.affinity, spec.priorityClassName]).toEqual([
        undefined,
        undefined,
        undefined,
        undefined,
      ]);
    }
  });
});

describe('labels', () => {
  test('every object carries app.kubernetes.io/component and the common labels', () => {
    const manifests = render('--set', 'commonLabels.example\\.com/cost-centre=ai', ...monitoringApi);
    for (const manifest of manifests) {
      const labels = manifest.metadata.labels ?? {};
      expect(labels['app.kubernetes.io/component']).toBeTruthy();
      expect(labels['example.com/cost-centre']).toBe('ai');
    }
    expect(workload(manifests, 'router').metadata.labels?.['app.kubernetes.io/component']).toBe('router');
  });

  test("ServiceMonitors and the PrometheusRule carry the labels the operator's selectors look for", () => {
    const manifests = render(
      '--set',
      'monitoring.serviceMonitor.enabled=true',
      '--set',
      'monitoring.serviceMonitor.labels.release=kube-prometheus-stack',
      '--set',
      'monitoring.prometheusRule.enabled=true',
      '--set',
      'monitoring.prometheusRule.labels.role=alert-rules',
      '--set',
      'monitoring.prometheusRule.runbookBaseUrl=https://runbooks.example.com/',
      ...monitoringApi,
    );
    for (const monitor of ofKind(manifests, 'ServiceMonitor')) {
      expect(monitor.metadata.labels?.release).toBe('kube-prometheus-stack');
    }
    expect(ofKind(manifests, 'PrometheusRule')[0]?.metadata.labels?.role).toBe('alert-rules');
  });
});

describe('security context', () => {
  test("OpenShift's restricted profile: the user, group and fsGroup left to the namespace's range", () => {
    const file = valuesFile('openshift.yaml', {
      podSecurityContext: { runAsUser: null, runAsGroup: null, fsGroup: null },
    });
    for (const spec of pods(render('-f', file))) {
      expect(spec.securityContext).toEqual({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    }
  });

  test('the defaults: a fixed non-root user; containers read-only, unprivileged, every capability dropped', () => {
    for (const spec of pods(render())) {
      expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 });
      for (const each of spec.containers) {
        expect(each.securityContext).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          privileged: false,
          capabilities: { drop: ['ALL'] },
        });
      }
    }
  });

  test.each([
    [['--set', 'podSecurityContext.runAsNonRoot=false'], "at '/podSecurityContext/runAsNonRoot'"],
    [['--set', 'containerSecurityContext.privileged=true'], "at '/containerSecurityContext/privileged'"],
    [['--set', 'auth.image.digest=latest'], "at '/auth/image/digest'"],
    [['--set', 'router.serviceAccount.annotationz=1'], "additional properties 'annotationz' not allowed"],
  ])('%j is refused by the schema', (args, message) => {
    expect(renderFails(...args)).toContain(message);
  });
});

describe('cluster domain', () => {
  test('addresses and certificate names use clusterDomain', () => {
    const manifests = render('--set', 'clusterDomain=uk-south.example');
    const host = `${prefix}-auth.${namespace}.svc.uk-south.example`;
    expect(envOf(manifests, 'ingress').get('AUTH_ADDRESS')?.value).toBe(`dns:///${host}:50051`);
    expect(named(manifests, 'Certificate', `${prefix}-auth`).spec.dnsNames).toContain(host);
  });
});

describe('helm test and NOTES.txt', () => {
  test('a test Pod checks the public Service from inside the cluster with the ingress image', () => {
    const pod = named(render(), 'Pod', `${prefix}-ingress-test`);
    expect(pod.metadata.annotations?.['helm.sh/hook']).toBe('test');
    const [check] = podSpec(pod).containers;
    expect(check?.image).toBe('inference-gateway/ingress:0.1.0');
    expect(check?.env).toEqual([
      { name: 'PUBLIC_URL', value: `http://${prefix}-ingress.${namespace}.svc.cluster.local:80` },
    ]);
    expect(check?.command?.join(' ')).toContain('/readyz');
  });

  test('NOTES.txt names the Services and warns about plaintext gRPC', () => {
    const notes = (...args: string[]) => {
      const run = helmRun(['install', release, chartDir, '--namespace', namespace, '--dry-run=client', ...args]);
      expect(run.status).toBe(0);
      return run.stdout.slice(run.stdout.indexOf('NOTES:'));
    };
    const secure = notes();
    expect(secure).toContain(`service ${prefix}-ingress port 80`);
    expect(secure).toContain(`helm test ${release}`);
    expect(secure).not.toContain('WARNING: grpc');
    expect(notes('--set', 'grpc.insecure=true')).toContain('WARNING: grpc.insecure is true');
  });
});
