import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the secret is `whsec_` + base64 of its
 * bytes; each signature is `v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`.
 */
const secretPrefix = 'whsec_';

/** A new signing secret: 32 random bytes. */
export function newSigningSecret(): string {
  return `${secretPrefix}${randomBytes(32).toString('base64')}`;
}

function secretBytes(secret: string): Buffer {
  return Buffer.from(secret.startsWith(secretPrefix) ? secret.slice(secretPrefix.length) : secret, 'base64');
}

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * The headers of one delivery. One signature per secret, separated by spaces: while a rotated-out
 * secret still signs, a receiver holding either one verifies the message.
 */
export function signedHeaders(
  secrets: readonly string[],
  messageId: string,
  timestampSeconds: number,
  body: string,
): SignedHeaders {
  const content = `${messageId}.${timestampSeconds}.${body}`;
  const signatures = secrets.map(
    (secret) => `v1,${createHmac('sha256', secretBytes(secret)).update(content).digest('base64')}`,
  );
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': signatures.join(' '),
  };
}
