import { createKafka } from '../src';
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
