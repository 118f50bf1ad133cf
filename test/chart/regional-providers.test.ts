import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

// The router's credentials for Bedrock and Vertex AI pools, as the chart renders them offline.

const repoRoot = join(__dirname, '..', '..');
const chartDir = join(repoRoot, 'charts', 'inference-gateway');

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}
interface Manifest {
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  spec?: {
    template?: {
      spec: {
        serviceAccountName?: string;
        containers: { env: EnvVar[]; volumeMounts: { name: string; mountPath: string }[] }[];
        volumes: { name: string; secret?: { secretName: string; items?: { key: string; path: string }[] } }[];
      };
    };
  };
}

let helm = '';
beforeAll(() => {
  helm = execFileSync('bash', [join(repoRoot, 'deploy', 'install-helm.sh')], { encoding: 'utf8' }).trim();
}, 120_000);

function render(...args: string[]): Manifest[] {
  const run = spawnSync(helm, ['template', 'gw', chartDir, '--namespace', 'gw', ...args], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`helm template failed: ${run.stderr}`);
  return parseAllDocuments(run.stdout)
    .map((document) => document.toJS() as Manifest | null)
    .filter((manifest): manifest is Manifest => manifest !== null);
}

const routerPod = (manifests: Manifest[]) =>
  manifests.find(
    (manifest) => manifest.kind === 'Deployment' && manifest.metadata.name === 'gw-inference-gateway-router',
  )!.spec!.template!.spec;

describe('regional provider credentials', () => {
  it('by default: no provider variables; the router runs as its own ServiceAccount, without annotations', () => {
    const manifests = render();
    const pod = routerPod(manifests);
    expect(pod.serviceAccountName).toBe('gw-inference-gateway-router');
    const account = manifests.find(
      (manifest) => manifest.kind === 'ServiceAccount' && manifest.metadata.name === 'gw-inference-gateway-router',
    );
    expect(account?.metadata.annotations).toBeUndefined();
    const names = pod.containers[0]!.env.map((variable) => variable.name);
    expect(names.filter((name) => name.startsWith('AWS_') || name.startsWith('GOOGLE_'))).toEqual([]);
  });

  it("workload identity: the router's ServiceAccount annotated, and no other", () => {
    const manifests = render(
      '--set-string',
      'router.serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::123456789012:role/gw',
      '--set-string',
      'router.serviceAccount.annotations.iam\\.gke\\.io/gcp-service-account=gw@demo-project.iam.gserviceaccount.com',
    );
    const accounts = manifests.filter((manifest) => manifest.kind === 'ServiceAccount');
    const router = accounts.find((account) => account.metadata.name === 'gw-inference-gateway-router');
    expect(router!.metadata.annotations).toEqual({
      'eks.amazonaws.com/role-arn': 'arn:aws:iam::123456789012:role/gw',
      'iam.gke.io/gcp-service-account': 'gw@demo-project.iam.gserviceaccount.com',
    });
    for (const other of accounts.filter((account) => account !== router)) {
      expect(other.metadata.annotations).toBeUndefined();
    }
    expect(routerPod(manifests).serviceAccountName).toBe('gw-inference-gateway-router');
  });

  it('existing Secrets: AWS keys by reference and the Google key file mounted', () => {
    const pod = routerPod(
      render(
        '--set',
        'regionalProviders.aws.existingSecret=aws-keys',
        '--set',
        'regionalProviders.google.existingSecret=gcp-key',
        '--set',
        'regionalProviders.google.key=sa.json',
      ),
    );
    const env = new Map(pod.containers[0]!.env.map((variable) => [variable.name, variable]));
    expect(env.get('AWS_ACCESS_KEY_ID')?.valueFrom?.secretKeyRef).toEqual({
      name: 'aws-keys',
      key: 'AWS_ACCESS_KEY_ID',
    });
    expect(env.get('AWS_SECRET_ACCESS_KEY')?.valueFrom?.secretKeyRef).toEqual({
      name: 'aws-keys',
      key: 'AWS_SECRET_ACCESS_KEY',
    });
    expect(env.get('AWS_SESSION_TOKEN')?.valueFrom?.secretKeyRef).toMatchObject({ optional: true });
    expect(env.get('GOOGLE_APPLICATION_CREDENTIALS')?.value).toBe('/etc/gateway/google/key.json');
    expect(pod.containers[0]!.volumeMounts).toContainEqual(
      expect.objectContaining({ name: 'google-credentials', mountPath: '/etc/gateway/google' }),
    );
    expect(pod.volumes).toContainEqual({
      name: 'google-credentials',
      secret: { secretName: 'gcp-key', items: [{ key: 'sa.json', path: 'key.json' }] },
    });
  });
});
