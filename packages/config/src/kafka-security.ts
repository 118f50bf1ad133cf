import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { readEnv } from './env';

/**
 * How a process authenticates to Kafka: a user name and password (PLAIN, SCRAM), or an AWS identity whose
 * signed token MSK checks (SASL/OAUTHBEARER; kafkajs's own `aws` mechanism needs a broker plugin MSK lacks).
 */
export type KafkaSasl =
  | { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string }
  | { mechanism: 'aws-msk-iam'; region: string };

/** TLS and SASL towards the brokers; both absent: plaintext, which only a loopback or dev broker should take. */
export interface KafkaSecurity {
  tls?: {
    /** PEM: the CA certificates the brokers' certificates must be signed by; absent: the system's. */
    ca?: Buffer;
    /** The name the brokers' certificates carry, when it is not the host dialled. */
    serverName?: string;
  };
  sasl?: KafkaSasl;
}

/** Every variable readKafkaSecurity reads: a process that starts another passes these through. */
export const kafkaSecurityVariables = [
  'KAFKA_TLS',
  'KAFKA_TLS_CA',
  'KAFKA_TLS_SERVER_NAME',
  'KAFKA_SASL_MECHANISM',
  'KAFKA_SASL_USERNAME',
  'KAFKA_SASL_PASSWORD',
  'KAFKA_AWS_REGION',
] as const;
type KafkaSecurityVariable = (typeof kafkaSecurityVariables)[number];

const variablesSchema = z.object({
  KAFKA_TLS: z.enum(['true', 'false'], { error: 'expected true or false' }).default('false'),
  KAFKA_TLS_CA: z.string().min(1, 'expected a file path').optional(),
  KAFKA_TLS_SERVER_NAME: z.string().min(1, 'expected a host name').optional(),
  KAFKA_SASL_MECHANISM: z
    .enum(['plain', 'scram-sha-256', 'scram-sha-512', 'aws-msk-iam'], {
      error: 'expected plain, scram-sha-256, scram-sha-512 or aws-msk-iam',
    })
    .optional(),
  KAFKA_SASL_USERNAME: z.string().min(1, 'expected a user name').optional(),
  KAFKA_SASL_PASSWORD: z.string().min(1, 'expected a password').optional(),
  KAFKA_AWS_REGION: z
    .string()
    .regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'expected an AWS region such as eu-west-2')
    .optional(),
});
type SecurityVariables = z.infer<typeof variablesSchema>;

class UnusableSetting extends Error {
  constructor(
    readonly variable: KafkaSecurityVariable,
    message: string,
  ) {
    super(message);
  }
}

function readCa(path: string): Buffer {
  let pem: Buffer;
  try {
    pem = readFileSync(path);
  } catch (error) {
    throw new UnusableSetting('KAFKA_TLS_CA', `expected a readable file (${(error as NodeJS.ErrnoException).code})`);
  }
  try {
    new X509Certificate(pem);
  } catch {
    throw new UnusableSetting('KAFKA_TLS_CA', 'expected a PEM CA certificate');
  }
  return pem;
}

function saslOf(vars: SecurityVariables): KafkaSasl | undefined {
  const mechanism = vars.KAFKA_SASL_MECHANISM;
  if (mechanism === undefined) {
    const stray = (['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD', 'KAFKA_AWS_REGION'] as const).find(
      (name) => vars[name] !== undefined,
    );
    if (stray !== undefined) throw new UnusableSetting(stray, 'expected unset without KAFKA_SASL_MECHANISM');
    return undefined;
  }
  // A password or a signed token never crosses the network in the clear.
  if (vars.KAFKA_TLS !== 'true') throw new UnusableSetting('KAFKA_TLS', 'expected true with KAFKA_SASL_MECHANISM');
  if (mechanism === 'aws-msk-iam') {
    if (vars.KAFKA_AWS_REGION === undefined) {
      throw new UnusableSetting('KAFKA_AWS_REGION', 'expected the AWS region of the MSK cluster');
    }
    return { mechanism, region: vars.KAFKA_AWS_REGION };
  }
  for (const name of ['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'] as const) {
    if (vars[name] === undefined) throw new UnusableSetting(name, `expected a value with ${mechanism}`);
  }
  return { mechanism, username: vars.KAFKA_SASL_USERNAME!, password: vars.KAFKA_SASL_PASSWORD! };
}

function securityOf(vars: SecurityVariables): KafkaSecurity {
  if (vars.KAFKA_TLS !== 'true') {
    const stray = (['KAFKA_TLS_CA', 'KAFKA_TLS_SERVER_NAME'] as const).find((name) => vars[name] !== undefined);
    if (stray !== undefined) throw new UnusableSetting(stray, 'expected unset unless KAFKA_TLS=true');
  }
  const sasl = saslOf(vars);
  if (vars.KAFKA_TLS !== 'true') return {};
  const tls = {
    ...(vars.KAFKA_TLS_CA === undefined ? {} : { ca: readCa(vars.KAFKA_TLS_CA) }),
    ...(vars.KAFKA_TLS_SERVER_NAME === undefined ? {} : { serverName: vars.KAFKA_TLS_SERVER_NAME }),
  };
  return sasl === undefined ? { tls } : { tls, sasl };
}

const securitySchema = variablesSchema.transform((vars, context): KafkaSecurity => {
  try {
    return securityOf(vars);
  } catch (error) {
    if (!(error instanceof UnusableSetting)) throw error;
    context.addIssue({ code: 'custom', path: [error.variable], message: error.message });
    return z.NEVER;
  }
});

/**
 * KAFKA_TLS (`true`: TLS, with KAFKA_TLS_CA and KAFKA_TLS_SERVER_NAME optional), KAFKA_SASL_MECHANISM with
 * KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD, or with KAFKA_AWS_REGION for MSK IAM. SASL without TLS is a
 * ConfigError; nothing set is plaintext. The CA file is read and checked here, once.
 */
export function readKafkaSecurity(env: NodeJS.ProcessEnv = process.env): KafkaSecurity {
  return readEnv(securitySchema, env);
}

/** The Kafka security variables that are set in env, to hand to a process started with its own environment. */
export function kafkaSecurityEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return Object.fromEntries(
    kafkaSecurityVariables.flatMap((name) => (env[name] === undefined ? [] : [[name, env[name]]])),
  );
}
