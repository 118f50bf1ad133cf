import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import {
  chartDir,
  gatewayApi,
  helmRun,
  monitoringApi,
  named,
  namespace,
  ofKind,
  prefix,
  release,
  render,
  renderFails,
  repoRoot,
} from './helm';
import type { Manifest } from './helm';

// Network: nothing in or out by default, each component's egress limited to what it uses (the router's to its
// upstreams), and the public API exposed with TLS only.

interface EgressRule {
  to?: Record<string, unknown>[];
  ports: { port: number; protocol: string }[];
}

function egressOf(manifests: Manifest[], component: string): EgressRule[] {
  return (named(manifests, 'NetworkPolicy', `${prefix}-${component}-egress`).spec.egress ?? []) as EgressRule[];
}

/** The TCP ports a component may reach, DNS aside. */
function tcpPorts(manifests: Manifest[], component: string): number[] {
  return egressOf(manifests, component)
    .flatMap((rule) => rule.ports)
    .filter((port) => port.port !== 53)
    .map((port) => port.port);
}

test('a default deny in both directions for every pod of the release', () => {
  const deny = named(render(), 'NetworkPolicy', `${prefix}-default-deny`);
  expect(deny.spec).toEqual({
    podSelector: {
      matchLabels: { 'app.kubernetes.io/part-of': 'inference-gateway', 'app.kubernetes.io/instance': release },
    },
    policyTypes: ['Ingress', 'Egress'],
  });
});

test('egress per component: DNS, and only the services and stores each one uses', () => {
  const manifests = render();
  for (const component of ['ingress', 'auth', 'policy', 'quota', 'router', 'metering', 'migrations']) {
    const [dns] = egressOf(manifests, component);
    expect(dns?.ports).toEqual([
      { port: 53, protocol: 'UDP' },
      { port: 53, protocol: 'TCP' },
    ]);
  }
  const kafka = [9092, 9093, 9094, 9096, 9098];
  expect(tcpPorts(manifests, 'ingress')).toEqual([50051, 50052, 50053, 50054, 50055, 6379, ...kafka]);
  expect(tcpPorts(manifests, 'auth')).toEqual([5432, 6379]);
  expect(tcpPorts(manifests, 'policy')).toEqual([]);
  expect(tcpPorts(manifests, 'quota')).toEqual([5432, 6379]);
  expect(tcpPorts(manifests, 'router')).toEqual([443]);
  expect(tcpPorts(manifests, 'metering')).toEqual([5432, ...kafka, 443]);
  expect(tcpPorts(manifests, 'migrations')).toEqual([5432]);
  // Ingress reaches the gRPC services by their pods, not by any address.
  expect(egressOf(manifests, 'ingress')[1]?.to).toEqual([
    { podSelector: { matchLabels: { 'app.kubernetes.io/name': 'auth', 'app.kubernetes.io/instance': release } } },
  ]);
});

test('the router reaches only its upstreams: public addresses by default, the configured ranges when named', () => {
  const [, byDefault] = egressOf(render(), 'router');
  expect(byDefault?.to).toEqual([
    { ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16'] } },
  ]);
  const [, named_] = egressOf(
    render('--set', 'networkPolicy.egress.upstreams.to[0].ipBlock.cidr=203.0.113.0/24'),
    'router',
  );
  expect(named_).toEqual({ ports: [{ port: 443, protocol: 'TCP' }], to: [{ ipBlock: { cidr: '203.0.113.0/24' } }] });
});

test("metering reaches accounts' webhook endpoints on public addresses, and a private receiver only when allowed", () => {
  const publicOnly = [
    { ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16'] } },
  ];
  expect(egressOf(render(), 'metering').at(-1)).toEqual({ ports: [{ port: 443, protocol: 'TCP' }], to: publicOnly });
  const manifests = render(
    '--set',
    'webhooks.allowedPrivateTargets[0]=hooks.internal.example:8443',
    '--set',
    'webhooks.caConfigMap=internal-ca',
    '--set',
    'networkPolicy.egress.webhooks.to[0].ipBlock.cidr=10.30.0.0/16',
    '--set',
    'networkPolicy.egress.webhooks.ports={443,8443}',
  );
  expect(egressOf(manifests, 'metering').at(-1)).toEqual({
    ports: [
      { port: 443, protocol: 'TCP' },
      { port: 8443, protocol: 'TCP' },
    ],
    to: [{ ipBlock: { cidr: '10.30.0.0/16' } }],
  });
  const pod = named(manifests, 'Deployment', `${prefix}-metering`).spec.template?.spec;
  const env = Object.fromEntries((pod?.containers[0]?.env ?? []).map((variable) => [variable.name, variable.value]));
  expect(env).toMatchObject({
    WEBHOOK_ALLOWED_PRIVATE_TARGETS: 'hooks.internal.example:8443',
    WEBHOOK_CA_FILE: '/etc/gateway/webhook-ca/ca.crt',
    WEBHOOK_TIMEOUT_MS: '10000',
    WEBHOOK_RETRY_WINDOW_MS: '86400000',
  });
  expect(pod?.volumes).toContainEqual({
    name: 'webhook-ca',
    configMap: { name: 'internal-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] },
  });
});

test('stores named as peers; the collector reached on OTLP ports only when an endpoint is set', () => {
  const manifests = render(
    '--set',
    'networkPolicy.egress.postgres.to[0].ipBlock.cidr=10.20.0.0/16',
    '--set',
    'otel.endpoint=http://collector.observability:4318',
  );
  expect(egressOf(manifests, 'auth')[1]).toEqual({
    ports: [{ port: 5432, protocol: 'TCP' }],
    to: [{ ipBlock: { cidr: '10.20.0.0/16' } }],
  });
  expect(tcpPorts(manifests, 'policy')).toEqual([4317, 4318]);
  expect(tcpPorts(render(), 'policy')).toEqual([]);
});

describe('the public API from outside', () => {
  test('an Ingress with TLS for the public Service only', () => {
    const manifests = render(
      '--set',
      'publicApi.ingress.enabled=true',
      '--set',
      'publicApi.ingress.hosts[0]=api.example.com',
      '--set',
      'publicApi.ingress.tlsSecretName=api-tls',
    );
    const ingress = named(manifests, 'Ingress', `${prefix}-ingress`);
    expect(ingress.spec.tls).toEqual([{ hosts: ['api.example.com'], secretName: 'api-tls' }]);
    expect(JSON.stringify(ingress.spec.rules)).toContain(`"name":"${prefix}-ingress","port":{"name":"http"}`);
    expect(JSON.stringify(ingress.spec)).not.toContain('admin');
  });

  test('a Gateway API HTTPRoute on an HTTPS listener', () => {
    const manifests = render(
      '--set',
      'publicApi.httpRoute.enabled=true',
      '--set',
      'publicApi.httpRoute.parentRefs[0].name=public',
      '--set',
      'publicApi.httpRoute.parentRefs[0].namespace=gateways',
      '--set',
      'publicApi.httpRoute.parentRefs[0].sectionName=https',
      '--set',
      'publicApi.httpRoute.hostnames[0]=api.example.com',
    );
    const route = named(manifests, 'HTTPRoute', `${prefix}-ingress`);
    expect(route.spec.parentRefs).toEqual([{ name: 'public', namespace: 'gateways', sectionName: 'https' }]);
    expect(JSON.stringify(route.spec.rules)).toContain(`"backendRefs":[{"name":"${prefix}-ingress","port":80}]`);
  });

  test.each([
    [
      ['--set', 'publicApi.ingress.enabled=true', '--set', 'publicApi.ingress.hosts[0]=a.example.com'],
      'publicApi.ingress needs hosts and tlsSecretName',
    ],
    [['--set', 'publicApi.httpRoute.enabled=true'], 'publicApi.httpRoute needs parentRefs'],
    [['--set', 'ingress.service.port=443'], 'would put plaintext HTTP behind the port clients take for TLS'],
  ])('%j is refused: %s', (args, message) => {
    expect(renderFails(...args)).toContain(message);
  });

  test('port 443 on the Service only when a load balancer ends TLS', () => {
    const manifests = render(
      '--set',
      'ingress.service.port=443',
      '--set',
      'ingress.service.tlsTerminatedByLoadBalancer=true',
    );
    expect(named(manifests, 'Service', `${prefix}-ingress`).spec.ports).toEqual([
      { name: 'http', port: 443, targetPort: 'http' },
    ]);
  });

  test.each(['values.yaml', 'values-dev.yaml', 'values-production.yaml'])(
    '%s: no Service puts plaintext behind 443; production exposes the API through an Ingress with TLS',
    (file) => {
      const manifests = render('-f', join(chartDir, file));
      for (const service of ofKind(manifests, 'Service')) {
        for (const port of (service.spec.ports ?? []) as { port: number }[]) expect(port.port).not.toBe(443);
      }
      if (file === 'values-production.yaml') {
        expect(ofKind(manifests, 'Ingress')[0]?.spec.tls).toEqual([
          { hosts: ['api.gateway.example.com'], secretName: 'gateway-public-tls' },
        ]);
      }
    },
  );
});

test('kubeconform: everything switched on is valid against Kubernetes and the CRDs (HTTPRoute included)', () => {
  const installed = execFileSync('bash', [join(repoRoot, 'deploy', 'install-kubeconform.sh')], { encoding: 'utf8' });
  const [kubeconform = '', schemaDir = '', crdSchemaDir = ''] = installed.trim().split('\n');
  const rendered = helmRun([
    'template',
    release,
    chartDir,
    '--namespace',
    namespace,
    '-f',
    join(chartDir, 'values-production.yaml'),
    ...monitoringApi,
    ...gatewayApi,
    '--set',
    'publicApi.httpRoute.enabled=true',
    '--set',
    'publicApi.httpRoute.parentRefs[0].name=public',
    '--set',
    'publicApi.httpRoute.hostnames[0]=api.example.com',
    '--set',
    'otel.endpoint=http://collector:4318',
  ]);
  expect(rendered.stderr).toBe('');
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
  expect(run.stdout).toMatch(/Valid: [1-9]\d*, Invalid: 0, Errors: 0, Skipped: 0/);
  // The ingress policies, the default deny and one egress policy per component and per Job (topic, spool drain,
  // spool sweeper).
  const policies = ofKind(render('-f', join(chartDir, 'values-production.yaml'), ...gatewayApi), 'NetworkPolicy');
  expect(policies.map((policy) => policy.metadata.name)).toEqual(
    expect.arrayContaining([
      'gw-inference-gateway-kafka-topics-egress',
      'gw-inference-gateway-spool-drain-egress',
      'gw-inference-gateway-spool-sweeper-egress',
    ]),
  );
  expect(policies.length).toBe(17);
}, 120_000);
