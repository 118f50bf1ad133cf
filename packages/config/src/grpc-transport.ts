import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { readEnv } from './env';

/**
 * How a process's gRPC server and clients talk: mutual TLS (each side presents a certificate signed by
 * a CA the other trusts), or plaintext, which only GRPC_INSECURE=true selects.
 */
export type GrpcTransport =
  | { kind: 'plaintext' }
  | {
      kind: 'mutualTls';
      /** PEM: this process's certificate, then any intermediates; presented to every peer. */
      certificateChain: Buffer;
      /** PEM: the private key of that certificate. */
      privateKey: Buffer;
      /** PEM: the CA certificates a peer's certificate must be signed by. */
      trustedCa: Buffer;
      /** The name a server's certificate must carry, when it is not the host of the address dialled. */
      serverName?: string;
      /**
       * A second, plaintext port that serves only grpc.health.v1.Health, for probes that cannot present a
       * client certificate (the kubelet's gRPC probes speak plaintext only). Unset: no such port.
       */
      healthPort?: number;
    };

const tlsFiles = ['GRPC_TLS_CERT', 'GRPC_TLS_KEY', 'GRPC_TLS_CA'] as const;
type TlsFile = (typeof tlsFiles)[number];
type TransportVariable = TlsFile | 'GRPC_TLS_SERVER_NAME' | 'GRPC_HEALTH_PORT' | 'GRPC_INSECURE';

const filePath = z.string().min(1, 'expected a file path').optional();

const variablesSchema = z.object({
  GRPC_TLS_CERT: filePath,
  GRPC_TLS_KEY: filePath,
  GRPC_TLS_CA: filePath,
  GRPC_TLS_SERVER_NAME: z.string().min(1, 'expected a host name').optional(),
  GRPC_HEALTH_PORT: z.coerce
    .number({ error: 'expected a port number' })
    .int('expected a port number')
    .min(1, 'expected a port number between 1 and 65535')
    .max(65535, 'expected a port number between 1 and 65535')
    .optional(),
  GRPC_INSECURE: z.enum(['true', 'false'], { error: 'expected true or false' }).default('false'),
});
type TransportVariables = z.infer<typeof variablesSchema>;

/** A transport setting that cannot be used: the variable to name and why. */
class UnusableSetting extends Error {
  constructor(
    readonly variable: TransportVariable,
    message: string,
  ) {
    super(message);
  }
}

function readPem(variable: TlsFile, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new UnusableSetting(variable, `expected a readable file (${(error as NodeJS.ErrnoException).code})`);
  }
}

function parsePem<T>(variable: TlsFile, pem: Buffer, parse: (pem: Buffer) => T, what: string): T {
  try {
    return parse(pem);
  } catch {
    throw new UnusableSetting(variable, `expected a PEM ${what}`);
  }
}

function transportOf(vars: TransportVariables): GrpcTransport {
  const tlsSetting = ([...tlsFiles, 'GRPC_TLS_SERVER_NAME'] as const).find((name) => vars[name] !== undefined);
  if (vars.GRPC_INSECURE === 'true') {
    // Both at once is a mistake either way round: refused rather than guessing which one was meant.
    if (tlsSetting !== undefined) throw new UnusableSetting(tlsSetting, 'expected unset with GRPC_INSECURE=true');
    // The gRPC port itself answers plaintext health checks then.
    if (vars.GRPC_HEALTH_PORT !== undefined) {
      throw new UnusableSetting('GRPC_HEALTH_PORT', 'expected unset with GRPC_INSECURE=true');
    }
    return { kind: 'plaintext' };
  }
  if (tlsSetting === undefined) {
    throw new UnusableSetting(
      'GRPC_TLS_CERT',
      'expected the certificate, key and CA files of mutual TLS (GRPC_TLS_CERT, GRPC_TLS_KEY, GRPC_TLS_CA), ' +
        'or GRPC_INSECURE=true for plaintext gRPC',
    );
  }
  const missing = tlsFiles.find((name) => vars[name] === undefined);
  if (missing !== undefined) {
    throw new UnusableSetting(missing, 'expected a file path: GRPC_TLS_CERT, GRPC_TLS_KEY and GRPC_TLS_CA go together');
  }
  // Checked here, so that a wrong file stops the process at start in one line instead of failing every
  // call of a client later.
  const certificateChain = readPem('GRPC_TLS_CERT', vars.GRPC_TLS_CERT!);
  const privateKey = readPem('GRPC_TLS_KEY', vars.GRPC_TLS_KEY!);
  const trustedCa = readPem('GRPC_TLS_CA', vars.GRPC_TLS_CA!);
  const certificate = parsePem('GRPC_TLS_CERT', certificateChain, (pem) => new X509Certificate(pem), 'certificate');
  const key = parsePem('GRPC_TLS_KEY', privateKey, createPrivateKey, 'private key');
  parsePem('GRPC_TLS_CA', trustedCa, (pem) => new X509Certificate(pem), 'CA certificate');
  if (!certificate.checkPrivateKey(key)) {
    throw new UnusableSetting('GRPC_TLS_KEY', 'expected the private key of the GRPC_TLS_CERT certificate');
  }
  return {
    kind: 'mutualTls',
    certificateChain,
    privateKey,
    trustedCa,
    serverName: vars.GRPC_TLS_SERVER_NAME,
    healthPort: vars.GRPC_HEALTH_PORT,
  };
}

const transportSchema = variablesSchema.transform((vars, context): GrpcTransport => {
  try {
    return transportOf(vars);
  } catch (error) {
    if (!(error instanceof UnusableSetting)) throw error;
    context.addIssue({ code: 'custom', path: [error.variable], message: error.message });
    return z.NEVER;
  }
});

/**
 * GRPC_TLS_CERT, GRPC_TLS_KEY, GRPC_TLS_CA (PEM files; GRPC_TLS_SERVER_NAME and GRPC_HEALTH_PORT optional), or
 * GRPC_INSECURE=true. Neither set is a ConfigError: a service never falls back to plaintext by itself.
 */
export function readGrpcTransport(env: NodeJS.ProcessEnv = process.env): GrpcTransport {
  return readEnv(transportSchema, env);
}
