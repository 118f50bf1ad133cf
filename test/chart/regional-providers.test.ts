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
  it('by default: no ServiceAccount, no provider variables, the namespace default account', () => {
    const manifests = render();
    expect(manifests.filter((manifest) => manifest.kind === 'ServiceAccount')).toEqual([]);
    const pod = routerPod(manifests);
    expect(pod.serviceAccountName).toBeUndefined();
    const names = pod.containers[0]!.env.map((variable) => variable.name);
    expect(names.filter((name) => name.startsWith('AWS_') || name.startsWith('GOOGLE_'))).toEqual([]);
  });

  it('workload identity: an annotated ServiceAccount that only the router uses', () => {
    const manifests = render(
      '--set',
      'regionalProviders.serviceAccount.create=true',
      '--set-string',
      'regionalProviders.serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::123456789012:role/gw',
      '--set-string',
      'regionalProviders.serviceAccount.annotations.iam\\.gke\\.io/gcp-service-account=gw@demo-project.iam.gserviceaccount.com',
    );
    const [account, ...others] = manifests.filter((manifest) => manifest.kind === 'ServiceAccount');
    expect(others).toEqual([]);
    expect(account!.metadata).toMatchObject({
      name: 'gw-inference-gateway-router',
      annotations: {
        'eks.amazonaws.com/role-arn': 'arn:aws:iam::123456789012:role/gw',
        'iam.gke.io/gcp-service-account': 'gw@demo-project.iam.gserviceaccount.com',
      },
    });
    expect(routerPod(manifests).serviceAccountName).toBe('gw-inference-gateway-router');
    const otherDeployments = manifests.filter(
      (manifest) => manifest.kind === 'Deployment' && manifest.metadata.name !== 'gw-inference-gateway-router',
    );
    for (const deployment of otherDeployments)
      expect(deployment.spec!.template!.spec.serviceAccountName).toBeUndefined();
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
