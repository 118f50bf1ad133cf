import { commonv1 } from '@gw/proto';

/** A key auth verified, as the pipeline reads it. */
export interface VerifiedKey {
  keyId: string;
  accountId: string;
  plan: string;
  environment: commonv1.Environment;
  residency: commonv1.Residency;
  privacyMode: commonv1.PrivacyMode;
  /** Unix milliseconds; undefined when the key never expires. */
  expiresAtUnixMs: number | undefined;
  /**
   * auth's record as it arrived, passed on unchanged to the services that decide on the rest of it
   * (allowed models, limit overrides): only the clients read it.
   */
  readonly record: commonv1.KeyContext;
}

/** Live keys are billed; test keys are served by the stub at cost 0. */
export function isLive(key: Pick<VerifiedKey, 'environment'>): boolean {
  return key.environment === commonv1.Environment.LIVE;
}
