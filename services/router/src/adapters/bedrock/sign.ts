import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import type { RequestSigner } from '../types';

/**
 * Signs each Bedrock request with Signature Version 4 for service `bedrock` in the pool's region, with
 * Smithy's signer (the AWS SDKs') and Node's SHA-256. The credentials provider is the AWS chain,
 * which caches credentials and fetches new ones before they expire.
 */
export function sigV4Signer(
  region: string,
  credentials: AwsCredentialIdentityProvider,
  /** For tests: another service name (the published test vectors use `service`) and a fixed clock. */
  options: { service?: string; now?: () => Date } = {},
): RequestSigner {
  const now = options.now ?? (() => new Date());
  const signer = new SignatureV4({
    service: options.service ?? 'bedrock',
    region,
    credentials,
    sha256: Hash.bind(null, 'sha256'),
    // Bedrock, like every AWS service but S3, expects the path's segments escaped again when signed.
    uriEscapePath: true,
    // Only S3 wants the payload's hash as a header; it is in the signature either way.
    applyChecksum: false,
  });
  return {
    async sign(request) {
      const url = new URL(request.url);
      const signed = await signer.sign(
        {
          method: 'POST',
          protocol: url.protocol,
          hostname: url.hostname,
          port: url.port === '' ? undefined : Number(url.port),
          path: url.pathname,
          query: {},
          headers: { ...request.headers, host: url.host },
          body: request.body,
        },
        { signingDate: now() },
      );
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(signed.headers)) if (name !== 'host') headers[name] = value;
      return { ...request, headers };
    },
  };
}
