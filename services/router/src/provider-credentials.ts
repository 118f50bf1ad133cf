import { fromNodeProviderChain } from '@aws-sdk/credential-providers';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import type { GoogleAuth } from 'google-auth-library';

/**
 * The credentials of the regional providers, one chain each for the whole process, made at first use
 * (a router without such pools never looks for them, nor loads Google's library). Each chain caches what it gets and fetches anew
 * before expiry: the AWS chain five minutes before (environment, web identity token file as on EKS,
 * container credentials, instance profile), Google's application default credentials five minutes
 * before (a key file, or the metadata server as under GKE workload identity).
 */
export interface ProviderCredentials {
  aws: AwsCredentialIdentityProvider;
  googleAccessToken(): Promise<string>;
}

const cloudPlatformScope = 'https://www.googleapis.com/auth/cloud-platform';

export function createProviderCredentials(): ProviderCredentials {
  let aws: AwsCredentialIdentityProvider | undefined;
  let google: Promise<GoogleAuth> | undefined;
  return {
    // Required with the process, not imported at first use: an import() from this CommonJS build would load
    // the SDK's ES module builds, second copies of the @smithy packages the Bedrock signer loads as CommonJS.
    aws: (options) => {
      aws ??= fromNodeProviderChain();
      return aws(options);
    },
    async googleAccessToken() {
      google ??= import('google-auth-library').then(
        ({ GoogleAuth }) => new GoogleAuth({ scopes: [cloudPlatformScope] }),
      );
      const token = await (await google).getAccessToken();
      if (token === null || token === undefined || token === '') throw new Error('no Google access token');
      return token;
    },
  };
}
