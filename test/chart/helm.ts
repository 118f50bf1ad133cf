import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

// helm and kubeconform for the chart's offline tests, and the rendered chart as plain objects.

export const repoRoot = join(__dirname, '..', '..');
export const chartDir = join(repoRoot, 'charts', 'inference-gateway');
export const namespace = 'gw';
export const release = 'gw';
export const prefix = `${release}-inference-gateway`;
export const grpcServices = ['auth', 'policy', 'quota', 'router', 'metering'];
export const allServices = ['ingress', ...grpcServices];
export const monitoringApi = ['--api-versions', 'monitoring.coreos.com/v1'];
export const gatewayApi = ['--api-versions', 'gateway.networking.k8s.io/v1'];

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  env?: EnvVar[];
  securityContext?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}

export interface PodSpec {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  securityContext?: Record<string, unknown>;
  imagePullSecrets?: { name: string }[];
  priorityClassName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: Record<string, unknown>[];
  affinity?: Record<string, unknown>;
  initContainers?: Container[];
  containers: Container[];
  volumes?: { name: string; secret?: { secretName: string } }[];
}

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown> & {
    template?: { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: PodSpec };
  };
  automountServiceAccountToken?: boolean;
  data?: Record<string, string>;
}

let helmBinary = '';

/** The helm binary (deploy/install-helm.sh caches it; test/run.sh installs it before the unit tests). */
export function helm(): string {
  helmBinary ||= execFileSync('bash', [join(repoRoot, 'deploy', 'install-helm.sh')], { encoding: 'utf8' }).trim();
  return helmBinary;
}

export function helmRun(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(helm(), args, { encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

export function parseManifests(text: string): Manifest[] {
  return parseAllDocuments(text)
    .map((document) => document.toJS() as Manifest | null)
    .filter((manifest): manifest is Manifest => manifest !== null)
    .map((manifest) => ({ ...manifest, spec: manifest.spec ?? {} }));
}

/** `helm template` of a chart directory (the gateway's by default) in the test namespace. */
export function renderChart(dir: string, args: string[]): Manifest[] {
  const run = helmRun(['template', release, dir, '--namespace', namespace, ...args]);
  if (run.status !== 0) throw new Error(`helm template failed: ${run.stderr}`);
  return parseManifests(run.stdout);
}

export function render(...args: string[]): Manifest[] {
  return renderChart(chartDir, args);
}

export function renderFails(...args: string[]): string {
  const run = helmRun(['template', release, chartDir, '--namespace', namespace, ...args]);
  expect(run.status).not.toBe(0);
  return run.stderr;
}

export function ofKind(manifests: Manifest[], kind: string): Manifest[] {
  return manifests.filter((manifest) => manifest.kind === kind);
}

export function named(manifests: Manifest[], kind: string, name: string): Manifest {
  const found = manifests.find((manifest) => manifest.kind === kind && manifest.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in the rendered chart`);
  return found;
}

export function workload(manifests: Manifest[], service: string): Manifest {
  return named(manifests, service === 'ingress' ? 'StatefulSet' : 'Deployment', `${prefix}-${service}`);
}

export function podSpec(manifest: Manifest): PodSpec {
  if (manifest.kind === 'Pod') return manifest.spec as unknown as PodSpec;
  if (!manifest.spec.template) throw new Error(`${manifest.kind} ${manifest.metadata.name} has no pod template`);
  return manifest.spec.template.spec;
}

/** Every pod the chart can start: workloads, hook Jobs and the `helm test` Pod. */
export function pods(manifests: Manifest[]): PodSpec[] {
  return manifests
    .filter((manifest) => manifest.kind === 'Pod' || manifest.spec.template !== undefined)
    .map((manifest) => podSpec(manifest));
}

export function mainContainer(manifests: Manifest[], service: string): Container {
  const found = podSpec(workload(manifests, service)).containers.find((each) => each.name === service);
  if (!found) throw new Error(`${service} has no container named ${service}`);
  return found;
}

export function envOf(manifests: Manifest[], service: string): Map<string, EnvVar> {
  return new Map((mainContainer(manifests, service).env ?? []).map((variable) => [variable.name, variable]));
}
