import aws4 from 'aws4';
import type { IncomingMessage } from 'node:http';
import type { SimAwsIdentities, SimAwsSecret } from './sts';

/** The AWS identity a simulated Bedrock listener accepts, and its region. */
export interface SimAwsOptions {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
}

export type SigV4Verdict = { ok: true } | { ok: false; status: number; type: string; message: string };

const authorizationPattern =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;
/** As the real service: a request signed more than five minutes from its clock is refused. */
const maxSkewMs = 5 * 60 * 1000;

function amzDateMs(value: string): number {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (match === null) return Number.NaN;
  const [, year, month, day, hour, minute, second] = match.map(Number) as number[];
  return Date.UTC(year!, month! - 1, day!, hour!, minute!, second!);
}

const refuse = (message: string, type = 'InvalidSignatureException', status = 403): SigV4Verdict => ({
  ok: false,
  status,
  type,
  message,
});

/** What `aws4` computes for the request as received, over exactly the headers the client signed. */
function signatureOf(
  request: IncomingMessage,
  raw: Buffer,
  headers: Record<string, string>,
  accessKeyId: string,
  secret: SimAwsSecret,
  region: string,
  amzDate: string,
): string | undefined {
  const signer = new aws4.RequestSigner(
    {
      method: request.method,
      host: headers.host,
      path: request.url,
      service: 'bedrock',
      region,
      headers,
      body: raw,
      // Sign what was sent, as it was sent: no header added, none left out.
      doNotModifyHeaders: true,
      extraHeadersToInclude: Object.fromEntries(Object.keys(headers).map((name) => [name, true])),
    } as aws4.Request,
    { accessKeyId, secretAccessKey: secret.secretAccessKey },
  ) as aws4.RequestSigner & { datetime: string };
  // The signing time is the request's own X-Amz-Date.
  signer.datetime = amzDate;
  return /Signature=([0-9a-f]{64})/.exec(signer.authHeader())?.[1];
}

/** Temporary credentials are good only with their own session token, signed, and until they expire. */
function sessionRefusal(request: IncomingMessage, secret: SimAwsSecret, signedHeaders: string[], now: number) {
  if (secret.sessionToken === undefined) return undefined;
  if (
    request.headers['x-amz-security-token'] !== secret.sessionToken ||
    !signedHeaders.includes('x-amz-security-token')
  )
    return refuse('The security token included in the request is invalid.', 'UnrecognizedClientException');
  if (secret.expiresAtMs !== undefined && now >= secret.expiresAtMs)
    return refuse('The security token included in the request is expired', 'ExpiredTokenException');
  return undefined;
}

/**
 * Checks a request's Signature Version 4 as Bedrock does, with the `aws4` library (independent of
 * the gateway's Smithy signer): the access key (the listener's own, or temporary credentials its STS
 * issued, with their session token and before they expire), the credential scope's service and
 * region, the clock skew, and the signature over the method, the path as sent, the signed headers and
 * the body's bytes.
 */
export function verifySigV4(
  request: IncomingMessage,
  raw: Buffer,
  aws: SimAwsOptions,
  identities?: SimAwsIdentities,
  now = Date.now(),
): SigV4Verdict {
  const authorization = request.headers.authorization;
  const parsed = typeof authorization === 'string' ? authorizationPattern.exec(authorization) : null;
  if (parsed === null) return refuse('Missing Authentication Token', 'MissingAuthenticationTokenException');
  const [, accessKeyId, date, region, service, signedHeaderList, signature] = parsed as unknown as string[];
  const secret =
    accessKeyId === aws.accessKeyId ? { secretAccessKey: aws.secretAccessKey } : identities?.temporary(accessKeyId!);
  if (secret === undefined)
    return refuse('The security token included in the request is invalid.', 'UnrecognizedClientException');
  if (service !== 'bedrock') return refuse(`Credential should be scoped to correct service: 'bedrock'.`);
  if (region !== aws.region)
    return refuse(`Credential should be scoped to a valid region. Expected '${aws.region}', got '${region}'.`);
  const amzDate = request.headers['x-amz-date'];
  const signedAt = typeof amzDate === 'string' ? amzDateMs(amzDate) : Number.NaN;
  if (Number.isNaN(signedAt) || amzDate?.slice(0, 8) !== date) return refuse('Invalid X-Amz-Date header.');
  if (Math.abs(now - signedAt) > maxSkewMs)
    return refuse(
      `Signature expired: ${amzDate} is now earlier than ${new Date(now - maxSkewMs).toISOString()} (${new Date(now).toISOString()} - 5 min.)`,
    );
  const signedHeaders = signedHeaderList!.split(';');
  if (!signedHeaders.includes('host') || !signedHeaders.includes('x-amz-date'))
    return refuse('Signed headers must include host and x-amz-date.');
  const session = sessionRefusal(request, secret, signedHeaders, now);
  if (session !== undefined) return session;
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) {
    const value = request.headers[name];
    if (value === undefined) return refuse(`Signed header ${name} is missing.`);
    headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const expectedSignature = signatureOf(request, raw, headers, accessKeyId!, secret, region!, amzDate as string);
  if (expectedSignature !== signature)
    return refuse(
      'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
    );
  return { ok: true };
}
