import { connectionOptions, createKafka } from '../src';
import type { KafkaLogLevel } from '../src';

function capturingKafka() {
  const lines: { level: KafkaLogLevel; message: string; fields: Record<string, unknown> }[] = [];
  const kafka = createKafka({
    brokers: ['127.0.0.1:9'],
    clientId: 'test',
    log: (level, message, fields) => lines.push({ level, message, fields }),
  });
  return { logger: kafka.logger(), lines };
}

describe('createKafka logging', () => {
  it('routes the client log lines to the given function with their namespace', () => {
    const { logger, lines } = capturingKafka();
    logger.namespace('Consumer').info('Starting', { groupId: 'g' });
    logger.namespace('Runner').error('Error when calling eachBatch', { topic: 't' });
    expect(lines).toEqual([
      { level: 'info', message: 'Starting', fields: { namespace: 'Consumer', groupId: 'g' } },
      { level: 'error', message: 'Error when calling eachBatch', fields: { namespace: 'Runner', topic: 't' } },
    ]);
  });

  it('turns connection retries into debug lines', () => {
    const { logger, lines } = capturingKafka();
    logger.namespace('Connection').error('Connection error: connect ECONNREFUSED 127.0.0.1:9', {});
    logger.namespace('BrokerPool').error('Failed to connect to seed broker, trying another broker from the list', {});
    expect(lines.map((line) => line.level)).toEqual(['debug', 'debug']);
  });

  it('turns the warning about bounded idempotent retries into a debug line', () => {
    const { logger, lines } = capturingKafka();
    logger.namespace('Producer').warn('Limiting retries for the idempotent producer may invalidate EoS guarantees');
    expect(lines[0]!.level).toBe('debug');
  });
});

describe('connectionOptions', () => {
  it('plaintext: neither ssl nor sasl', () => {
    expect(connectionOptions()).toEqual({});
    expect(connectionOptions({})).toEqual({});
  });

  it('TLS checks the brokers against the given CA and name; SCRAM and PLAIN pass the user and password', () => {
    const ca = Buffer.from('-----BEGIN CERTIFICATE-----');
    expect(
      connectionOptions({
        tls: { ca, serverName: 'kafka.internal' },
        sasl: { mechanism: 'scram-sha-512', username: 'gateway', password: 'secret' },
      }),
    ).toEqual({
      ssl: { rejectUnauthorized: true, ca: [ca], servername: 'kafka.internal' },
      sasl: { mechanism: 'scram-sha-512', username: 'gateway', password: 'secret' },
    });
    expect(connectionOptions({ tls: {} }).ssl).toEqual({ rejectUnauthorized: true });
  });

  it('MSK IAM: OAUTHBEARER with a token the AWS signer makes from the default credential chain', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    });
    try {
      const { sasl } = connectionOptions({ tls: {}, sasl: { mechanism: 'aws-msk-iam', region: 'eu-west-2' } });
      expect(sasl?.mechanism).toBe('oauthbearer');
      if (!sasl || !('oauthBearerProvider' in sasl)) throw new Error('no OAUTHBEARER token provider');
      const { value } = await sasl.oauthBearerProvider();
      // The token is a presigned URL (base64url) of the MSK action, signed for the cluster's region.
      const url = new URL(Buffer.from(value, 'base64url').toString());
      expect(url.host).toBe('kafka.eu-west-2.amazonaws.com');
      expect(url.searchParams.get('Action')).toBe('kafka-cluster:Connect');
      expect(url.searchParams.get('X-Amz-Credential')).toMatch(
        /^AKIAIOSFODNN7EXAMPLE\/\d{8}\/eu-west-2\/kafka-cluster\//,
      );
      expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    } finally {
      process.env = saved;
    }
  });
});
