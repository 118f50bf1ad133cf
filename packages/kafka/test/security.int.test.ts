import { readKafkaSecurity } from '@gw/config';
import type { KafkaSecurity } from '@gw/config';
import { testInfraEnv } from '@gw/testing';
import { createKafka, usageTopic } from '../src';

// The test infrastructure's one Kafka listener takes TLS and SCRAM only, as managed Kafka does: the tests
// and the services reach it with the settings infra.sh wrote, and nothing else gets in.

const infra = testInfraEnv();
const brokers = infra.KAFKA_BROKERS!.split(',');
const security = readKafkaSecurity(infra);

async function topicsWith(options: KafkaSecurity | undefined): Promise<string[]> {
  const kafka = createKafka({ brokers, clientId: 'security-test', log: () => undefined, security: options });
  const admin = kafka.admin({ retry: { retries: 0 } });
  await admin.connect();
  try {
    return await admin.listTopics();
  } finally {
    await admin.disconnect();
  }
}

test('the listener runs TLS with SCRAM-SHA-512 (infra.sh wrote KAFKA_TLS and KAFKA_SASL_*)', () => {
  expect(security.tls?.ca).toBeInstanceOf(Buffer);
  expect(security.sasl?.mechanism).toBe('scram-sha-512');
});

test('with the CA, the user and the password: connected, the usage topic is there', async () => {
  expect(await topicsWith(security)).toContain(usageTopic);
});

test('plaintext is refused', async () => {
  await expect(topicsWith(undefined)).rejects.toThrow();
});

test('TLS without SASL is refused', async () => {
  await expect(topicsWith({ tls: security.tls })).rejects.toThrow();
});

test('a wrong password is refused by SCRAM', async () => {
  const sasl = security.sasl;
  if (!sasl || sasl.mechanism === 'aws-msk-iam') throw new Error('expected SCRAM settings');
  await expect(
    topicsWith({ tls: security.tls, sasl: { ...sasl, password: `${sasl.password}-wrong` } }),
  ).rejects.toThrow(/SASL SCRAM SHA512 authentication failed/);
});

test('a broker certificate is checked against the CA: the system CAs alone do not trust it', async () => {
  await expect(topicsWith({ tls: { serverName: security.tls?.serverName }, sasl: security.sasl })).rejects.toThrow(
    /self[- ]signed|unable to verify|certificate/i,
  );
});
