import {
  allServices,
  chartDir,
  envOf,
  helmRun,
  mainContainer,
  namespace,
  podSpec,
  release,
  render,
  renderFails,
  workload,
} from './helm';

// Kafka from the chart: brokers from the Secret, then TLS and SASL (PLAIN, SCRAM, MSK IAM) for the two
// processes that talk to Kafka, ingress and metering, from one template both share.

const kafkaClients = ['ingress', 'metering'];

function kafkaEnv(manifests: ReturnType<typeof render>, service: string) {
  return [...envOf(manifests, service).values()].filter((variable) => variable.name.startsWith('KAFKA_'));
}

test('by default: the brokers only (plaintext), and NOTES.txt says so', () => {
  const manifests = render();
  for (const service of kafkaClients) {
    expect(kafkaEnv(manifests, service).map((variable) => variable.name)).toEqual(['KAFKA_BROKERS']);
  }
  const install = helmRun(['install', release, chartDir, '--namespace', namespace, '--dry-run=client']);
  expect(install.stdout).toContain('WARNING: kafka.tls.enabled is false');
});

test('SCRAM over TLS with a private CA: the same variables and CA mount in ingress and metering, nowhere else', () => {
  const manifests = render(
    '--set',
    'kafka.tls.enabled=true',
    '--set',
    'kafka.tls.caSecret=kafka-ca',
    '--set',
    'kafka.sasl.mechanism=scram-sha-512',
    '--set',
    'kafka.sasl.existingSecret=kafka-user',
  );
  for (const service of kafkaClients) {
    expect(kafkaEnv(manifests, service)).toEqual([
      { name: 'KAFKA_BROKERS', valueFrom: { secretKeyRef: { name: 'inference-gateway', key: 'KAFKA_BROKERS' } } },
      { name: 'KAFKA_TLS', value: 'true' },
      { name: 'KAFKA_TLS_CA', value: '/etc/gateway/kafka-ca/ca.crt' },
      { name: 'KAFKA_SASL_MECHANISM', value: 'scram-sha-512' },
      { name: 'KAFKA_SASL_USERNAME', valueFrom: { secretKeyRef: { name: 'kafka-user', key: 'KAFKA_SASL_USERNAME' } } },
      { name: 'KAFKA_SASL_PASSWORD', valueFrom: { secretKeyRef: { name: 'kafka-user', key: 'KAFKA_SASL_PASSWORD' } } },
    ]);
    expect(mainContainer(manifests, service).volumeMounts).toContainEqual({
      name: 'kafka-ca',
      mountPath: '/etc/gateway/kafka-ca',
      readOnly: true,
    });
    expect(podSpec(workload(manifests, service)).volumes).toContainEqual({
      name: 'kafka-ca',
      secret: { secretName: 'kafka-ca' },
    });
  }
  for (const service of allServices.filter((each) => !kafkaClients.includes(each))) {
    expect(kafkaEnv(manifests, service)).toEqual([]);
    expect(podSpec(workload(manifests, service)).volumes?.map((volume) => volume.name)).not.toContain('kafka-ca');
  }
});

test('PLAIN over TLS with the public CAs (Confluent Cloud, Event Hubs): no CA file, credentials from the main Secret', () => {
  const manifests = render('--set', 'kafka.tls.enabled=true', '--set', 'kafka.sasl.mechanism=plain');
  const env = envOf(manifests, 'metering');
  expect(env.has('KAFKA_TLS_CA')).toBe(false);
  expect(env.get('KAFKA_SASL_PASSWORD')?.valueFrom?.secretKeyRef?.name).toBe('inference-gateway');
  expect(podSpec(workload(manifests, 'metering')).volumes?.map((volume) => volume.name)).not.toContain('kafka-ca');
});

test("MSK IAM: the region, no password; the pod's identity comes from its ServiceAccount's IRSA annotation", () => {
  const role = 'arn:aws:iam::123456789012:role/gw-kafka';
  const manifests = render(
    '--set',
    'kafka.tls.enabled=true',
    '--set',
    'kafka.sasl.mechanism=aws-msk-iam',
    '--set',
    'kafka.sasl.awsRegion=eu-west-2',
    '--set',
    `ingress.serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=${role}`,
  );
  expect(kafkaEnv(manifests, 'ingress').map((variable) => [variable.name, variable.value])).toEqual([
    ['KAFKA_BROKERS', undefined],
    ['KAFKA_TLS', 'true'],
    ['KAFKA_SASL_MECHANISM', 'aws-msk-iam'],
    ['KAFKA_AWS_REGION', 'eu-west-2'],
  ]);
  const account = manifests.find(
    (manifest) => manifest.kind === 'ServiceAccount' && manifest.metadata.name.endsWith('-ingress'),
  );
  expect(account?.metadata.annotations).toEqual({ 'eks.amazonaws.com/role-arn': role });
});

test('the production example runs TLS and SCRAM', () => {
  const env = envOf(render('-f', `${chartDir}/values-production.yaml`), 'ingress');
  expect(env.get('KAFKA_TLS')?.value).toBe('true');
  expect(env.get('KAFKA_SASL_MECHANISM')?.value).toBe('scram-sha-512');
});

test.each([
  [['--set', 'kafka.sasl.mechanism=scram-sha-256'], 'kafka.sasl.mechanism needs kafka.tls.enabled: true'],
  [
    ['--set', 'kafka.tls.enabled=true', '--set', 'kafka.sasl.mechanism=aws-msk-iam'],
    'kafka.sasl.awsRegion: name the AWS region',
  ],
  [['--set', 'kafka.sasl.mechanism=gssapi'], "at '/kafka/sasl/mechanism'"],
])('%j is refused: %s', (args, message) => {
  expect(renderFails(...args)).toContain(message);
});
