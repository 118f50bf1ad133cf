import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';

/** What a Bedrock request is signed with: a long-term key, or temporary credentials and their session token. */
export interface SimAwsSecret {
  secretAccessKey: string;
  /** Temporary credentials only: the x-amz-security-token the request must carry. */
  sessionToken?: string;
  /** Temporary credentials only: when they stop being accepted (ms since the epoch). */
  expiresAtMs?: number;
}

/**
 * The AWS identities a simulated Bedrock accepts: the listener's long-term key, and the temporary
 * credentials its simulated STS issued (bounded), shared by every listener of one process, as STS
 * credentials are good in every region.
 */
export class SimAwsIdentities {
  private readonly issued = new Map<string, SimAwsSecret>();

  constructor(
    /** How long the temporary credentials STS issues last, in seconds (real STS: 3600 unless asked). */
    readonly temporaryCredentialSeconds = 3600,
  ) {}

  /** The temporary credentials STS issued under this access key id, if any. */
  temporary(accessKeyId: string): SimAwsSecret | undefined {
    return this.issued.get(accessKeyId);
  }

  issue(now = Date.now()): { accessKeyId: string } & Required<SimAwsSecret> {
    if (this.issued.size >= 10_000) this.issued.clear();
    const accessKeyId = `ASIASIM${randomBytes(7).toString('hex').toUpperCase()}`;
    const secret = {
      secretAccessKey: randomBytes(30).toString('base64'),
      sessionToken: `IQoJsim${randomBytes(48).toString('base64')}`,
      expiresAtMs: now + this.temporaryCredentialSeconds * 1000,
    };
    this.issued.set(accessKeyId, secret);
    return { accessKeyId, ...secret };
  }

  /** How many temporary credentials were issued: a test sees the router fetch new ones before expiry. */
  get issuedCount(): number {
    return this.issued.size;
  }
}

const stsNamespace = 'https://sts.amazonaws.com/doc/2011-06-15/';
const roleArnPattern = /^arn:aws:iam::(\d{12}):role\/([\w+=,.@/-]{1,64})$/;
/** A JSON Web Token's shape: three base64url parts, the first two non-empty. */
const jwtPattern = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

function escapeXml(text: string): string {
  return text.replace(/[<>&'"]/g, (char) => `&#${char.charCodeAt(0)};`);
}

function sendStsError(response: ServerResponse, status: number, code: string, message: string): void {
  response.writeHead(status, { 'content-type': 'text/xml', 'x-amzn-requestid': randomBytes(16).toString('hex') });
  response.end(
    `<ErrorResponse xmlns="${stsNamespace}"><Error><Type>Sender</Type><Code>${code}</Code>` +
      `<Message>${escapeXml(message)}</Message></Error><RequestId>${randomBytes(16).toString('hex')}</RequestId></ErrorResponse>`,
  );
}

/**
 * STS's `AssumeRoleWithWebIdentity` (the query protocol: a form body, an XML answer), as an EKS pod's
 * AWS SDK calls it with its projected service-account token (IRSA). Unsigned, as the real call is. The
 * token must be a JWT, as STS requires before it asks the cluster's OIDC provider (which the simulator
 * does not have); the role must be an IAM role ARN. The credentials issued are accepted by every
 * Bedrock listener of the process until they expire.
 */
export function handleSts(raw: Buffer, response: ServerResponse, identities: SimAwsIdentities): void {
  const form = new URLSearchParams(raw.toString('utf8'));
  const action = form.get('Action');
  if (action !== 'AssumeRoleWithWebIdentity')
    return sendStsError(response, 400, 'InvalidAction', `Could not find operation ${action ?? ''} for version.`);
  if (form.get('Version') !== '2011-06-15')
    return sendStsError(response, 400, 'InvalidParameterValue', 'The version must be 2011-06-15.');
  const roleArn = form.get('RoleArn') ?? '';
  const sessionName = form.get('RoleSessionName') ?? '';
  const token = form.get('WebIdentityToken') ?? '';
  const role = roleArnPattern.exec(roleArn);
  if (role === null) return sendStsError(response, 400, 'ValidationError', `${roleArn} is invalid`);
  if (!/^[\w+=,.@-]{2,64}$/.test(sessionName))
    return sendStsError(response, 400, 'ValidationError', 'RoleSessionName is invalid.');
  if (!jwtPattern.test(token))
    return sendStsError(response, 400, 'InvalidIdentityToken', 'The ID Token provided is not a valid JWT.');
  const credentials = identities.issue();
  const [, account, roleName] = role as unknown as [string, string, string];
  const body =
    `<AssumeRoleWithWebIdentityResponse xmlns="${stsNamespace}"><AssumeRoleWithWebIdentityResult>` +
    `<SubjectFromWebIdentityToken>system:serviceaccount:gateway:router</SubjectFromWebIdentityToken>` +
    `<Audience>sts.amazonaws.com</Audience>` +
    `<AssumedRoleUser><Arn>arn:aws:sts::${account}:assumed-role/${escapeXml(roleName)}/${escapeXml(sessionName)}</Arn>` +
    `<AssumedRoleId>AROASIMULATED:${escapeXml(sessionName)}</AssumedRoleId></AssumedRoleUser>` +
    `<Credentials><AccessKeyId>${credentials.accessKeyId}</AccessKeyId>` +
    `<SecretAccessKey>${credentials.secretAccessKey}</SecretAccessKey>` +
    `<SessionToken>${credentials.sessionToken}</SessionToken>` +
    `<Expiration>${new Date(credentials.expiresAtMs).toISOString()}</Expiration></Credentials>` +
    `<Provider>arn:aws:iam::${account}:oidc-provider/oidc.eks.eu-west-2.amazonaws.com/id/SIMULATED</Provider>` +
    `</AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>${randomBytes(16).toString('hex')}</RequestId>` +
    `</ResponseMetadata></AssumeRoleWithWebIdentityResponse>`;
  response.writeHead(200, { 'content-type': 'text/xml' });
  response.end(body);
}
