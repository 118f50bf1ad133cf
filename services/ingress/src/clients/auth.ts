import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { commonv1 } from '@gw/proto';
import type { VerifiedKey } from '../domain/key';
import { callScope } from '../domain/request-scope';
import type { RequestScope } from '../domain/request-scope';
import type { Clients } from './connections';
import { ReplyDecoder } from './reply';
import type { MalformedReplies } from './reply';

/** What the request path asks auth. */
export interface AuthClient {
  /** The key's record from auth, or the refusal (401, 403). */
  verifyKey(presentedKey: string, sourceAddress: string, scope: RequestScope): Promise<Result<VerifiedKey>>;
}

/** auth's record of a key, decoded: an answer without a key, or without its ids, is a malformed reply. */
export function decodeKey(decode: ReplyDecoder, record: commonv1.KeyContext | undefined): Result<VerifiedKey> {
  const key = decode.present(record, 'key');
  if (!key.ok) return key;
  const keyId = decode.id(key.value.keyId, 'key.key_id');
  if (!keyId.ok) return keyId;
  const accountId = decode.id(key.value.accountId, 'key.account_id');
  if (!accountId.ok) return accountId;
  let expiresAtUnixMs: number | undefined;
  if (key.value.expiresAtUnixMs !== undefined) {
    const expires = decode.count(key.value.expiresAtUnixMs, 'key.expires_at_unix_ms');
    if (!expires.ok) return expires;
    expiresAtUnixMs = expires.value;
  }
  return ok({
    keyId: keyId.value,
    accountId: accountId.value,
    plan: key.value.plan,
    environment: key.value.environment,
    residency: key.value.residency,
    privacyMode: key.value.privacyMode,
    expiresAtUnixMs,
    record: key.value,
  });
}

export function authClient(auth: Pick<Clients['auth'], 'verifyKey'>, malformed: MalformedReplies): AuthClient {
  const decode = new ReplyDecoder('auth', malformed);
  return {
    verifyKey: async (presentedKey, sourceAddress, scope) => {
      const verified = await auth.verifyKey({ key: presentedKey, sourceAddress }, callScope(scope));
      return verified.ok ? decodeKey(decode, verified.value.key) : verified;
    },
  };
}
