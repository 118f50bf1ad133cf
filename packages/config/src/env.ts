import { z } from 'zod';

/** Thrown when the environment does not satisfy a service's schema; the message is one line. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Reads and validates the environment once, at start. */
export function readEnv<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const variable = issue.path.join('.') || '(environment)';
  const raw = typeof issue.path[0] === 'string' ? env[issue.path[0]] : undefined;
  const got = raw === undefined ? 'it is not set' : `got ${JSON.stringify(raw)}`;
  throw new ConfigError(`invalid configuration: ${variable}: ${issue.message} (${got})`);
}

/** Runs a service's start-up, turning a configuration error into one clear line and exit code 2. */
export async function runOrExit(start: () => Promise<void>): Promise<void> {
  try {
    await start();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
}

const MiB = 1024 * 1024;

/** Ingress's request-body limit unless BODY_LIMIT_BYTES says otherwise. */
export const defaultBodyLimitBytes = 32 * MiB;

/**
 * The gRPC message size that carries a request body of bodyLimitBytes: the body travels whole inside
 * a message (ingress → policy, ingress → router), with 1 MiB left for the rest of the message.
 */
export const grpcMessageLimitFor = (bodyLimitBytes: number): number => bodyLimitBytes + MiB;

// host:port, [v6]:port, optionally after dns:/// (the resolver scheme, whose addresses gRPC calls round robin).
const grpcAddress = /^(dns:\/\/\/)?([^\s:/]+|\[[0-9a-fA-F:]+\]):\d{1,5}$/;

/** Field builders for the usual kinds of variable. */
export const env = {
  port: (fallback: number) =>
    z.coerce
      .number({ error: 'expected a port number' })
      .int('expected a port number')
      .min(0, 'expected a port number between 0 and 65535')
      .max(65535, 'expected a port number between 0 and 65535')
      .default(fallback),
  positiveInt: (fallback: number) =>
    z.coerce
      .number({ error: 'expected a positive integer' })
      .int('expected a positive integer')
      .positive('expected a positive integer')
      .default(fallback),
  /** Zero allowed: a duration that may be switched off. */
  nonNegativeInt: (fallback: number) =>
    z.coerce
      .number({ error: 'expected an integer, 0 or more' })
      .int('expected an integer, 0 or more')
      .min(0, 'expected an integer, 0 or more')
      .default(fallback),
  host: (fallback: string) => z.string().min(1, 'expected a host name or address').default(fallback),
  /** host:port, or dns:///host:port for a gRPC service behind several addresses (a headless Service). */
  address: (fallback: string) =>
    z.string().regex(grpcAddress, 'expected host:port or dns:///host:port').default(fallback),
  /** GRPC_MAX_MESSAGE_BYTES: largest gRPC message a service receives or sends; fits the default body limit. */
  grpcMaxMessageBytes: () => env.positiveInt(grpcMessageLimitFor(defaultBodyLimitBytes)),
  url: (fallback?: string) => {
    const url = z.url({ error: 'expected a URL' });
    return fallback === undefined ? url : url.default(fallback);
  },
  /** Comma-separated list; blanks dropped. */
  list: (fallback: string) =>
    z
      .string()
      .default(fallback)
      .transform((value) =>
        value
          .split(',')
          .map((item) => item.trim())
          .filter((item) => item.length > 0),
      ),
  logLevel: () =>
    z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
        error: 'expected one of fatal, error, warn, info, debug, trace, silent',
      })
      .default('info'),
  secret: () => z.string({ error: 'expected a secret' }).min(16, 'expected a secret of at least 16 characters'),
};
