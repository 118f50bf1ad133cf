import type { KafkaSasl, KafkaSecurity } from '@gw/config';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import type { KafkaConfig, LogEntry, logCreator, SASLOptions } from 'kafkajs';

export type { Kafka } from 'kafkajs';

export type KafkaLogLevel = 'error' | 'warn' | 'info' | 'debug';

/**
 * Where the client's own log lines go. Fields carry ids, broker addresses and error details,
 * never message payloads.
 */
export type KafkaLog = (level: KafkaLogLevel, message: string, fields: Record<string, unknown>) => void;

export interface KafkaOptions {
  /** host:port of each seed broker. */
  brokers: string[];
  clientId: string;
  log: KafkaLog;
  /** TLS and SASL (readKafkaSecurity from @gw/config); absent: plaintext. */
  security?: KafkaSecurity;
}

/**
 * Namespaces that log every failed connection attempt and every retried response (a broker
 * restarting, a group rebalancing) at error level. The failure that matters reaches the caller
 * anyway, as a rejected call or a consumer crash, so these go to debug.
 */
const reconnectionNamespaces = new Set(['Connection', 'BrokerPool']);

/**
 * Logged once per idempotent producer because UsageEventProducer bounds its retries; a send that
 * gives up is retried by its caller, and consumers drop the duplicates by event id.
 */
const boundedRetriesWarning = 'Limiting retries for the idempotent producer may invalidate EoS guarantees';

function levelOf(entry: LogEntry): KafkaLogLevel {
  if (reconnectionNamespaces.has(entry.namespace) || entry.log.message === boundedRetriesWarning) return 'debug';
  switch (entry.level) {
    case logLevel.ERROR:
      return 'error';
    case logLevel.WARN:
      return 'warn';
    case logLevel.INFO:
      return 'info';
    default:
      return 'debug';
  }
}

function routeTo(log: KafkaLog): logCreator {
  return () => (entry) => {
    // kafkajs adds its own timestamp and logger name; the service's logger has both already.
    const { message, timestamp: _timestamp, logger: _logger, ...fields } = entry.log;
    log(levelOf(entry), message, { namespace: entry.namespace, ...fields });
  };
}

/**
 * MSK IAM: a token signed with the process's AWS identity (the default chain: IRSA's web identity, an
 * instance role, environment keys), asked for at every (re)authentication. Loaded only when chosen.
 */
function mskIamToken(region: string): () => Promise<{ value: string }> {
  return async () => {
    const { generateAuthToken } = await import('aws-msk-iam-sasl-signer-js');
    const { token } = await generateAuthToken({ region });
    return { value: token };
  };
}

function saslOptions(sasl: KafkaSasl): SASLOptions {
  if (sasl.mechanism === 'aws-msk-iam') {
    return { mechanism: 'oauthbearer', oauthBearerProvider: mskIamToken(sasl.region) };
  }
  return { mechanism: sasl.mechanism, username: sasl.username, password: sasl.password };
}

/** kafkajs's ssl and sasl options for a KafkaSecurity; nothing for plaintext. */
export function connectionOptions(security: KafkaSecurity = {}): Pick<KafkaConfig, 'ssl' | 'sasl'> {
  const options: Pick<KafkaConfig, 'ssl' | 'sasl'> = {};
  if (security.tls) {
    const { ca, serverName } = security.tls;
    options.ssl = {
      rejectUnauthorized: true,
      ...(ca === undefined ? {} : { ca: [ca] }),
      ...(serverName === undefined ? {} : { servername: serverName }),
    };
  }
  if (security.sasl) options.sasl = saslOptions(security.sasl);
  return options;
}

/** A Kafka client whose logs go to the given function instead of the console. */
export function createKafka(options: KafkaOptions): Kafka {
  return new Kafka({
    clientId: options.clientId,
    brokers: options.brokers,
    logLevel: logLevel.INFO,
    logCreator: routeTo(options.log),
    ...connectionOptions(options.security),
  });
}

/**
 * The Java client's partitioner (murmur2 of the key), named explicitly: the same account lands on
 * the same partition whichever client produced it, and kafkajs stops warning about its default.
 */
export const keyHashPartitioner = Partitioners.DefaultPartitioner;
