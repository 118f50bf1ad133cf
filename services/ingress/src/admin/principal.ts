import { createHash, timingSafeEqual } from 'node:crypto';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { Clients } from '../clients';

/**
 * Who calls the admin API: the operator (every account) or an account's admin key (that account; read
 * only while the account is suspended).
 */
export type Principal =
  { kind: 'operator' } | { kind: 'account'; accountId: string; adminKeyId: string; accountSuspended: boolean };

const digest = (value: string) => createHash('sha256').update(value).digest();

const unauthenticated = () =>
  err(
    gatewayError(
      'authentication_error',
      'Invalid or missing admin credential. Send the operator token or an account admin key as "Authorization: Bearer <token>".',
    ),
  );

export async function authenticatePrincipal(
  authorization: string | undefined,
  operatorToken: string,
  auth: Clients['auth'],
): Promise<Result<Principal>> {
  const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
  if (!token) return unauthenticated();
  // Compared as digests so the comparison takes the same time whatever the length.
  if (timingSafeEqual(digest(token), digest(operatorToken))) return ok({ kind: 'operator' });
  const verified = await auth.verifyAdminKey({ key: token });
  if (verified.ok) {
    const { accountId, adminKeyId, accountSuspended } = verified.value;
    return ok({ kind: 'account', accountId, adminKeyId, accountSuspended });
  }
  return verified.error.type === 'authentication_error' ? unauthenticated() : verified;
}

/** A suspended account's admin keys may read but change nothing: a leaked one cannot act for it. */
export function requireWriteAccess(principal: Principal, method: string): Result<void> {
  if (principal.kind === 'operator' || !principal.accountSuspended || method === 'GET' || method === 'HEAD') {
    return ok(undefined);
  }
  return err(
    gatewayError('permission_error', 'This account is suspended: its admin keys may read but not change anything.'),
  );
}

export function requireOperator(principal: Principal): Result<void> {
  return principal.kind === 'operator'
    ? ok(undefined)
    : err(gatewayError('permission_error', 'This action needs the operator token.'));
}

/** An account admin key sees only its own account; any other looks as if it did not exist. */
export function requireAccount(principal: Principal, accountId: string, what = 'account'): Result<void> {
  if (principal.kind === 'operator' || principal.accountId === accountId) return ok(undefined);
  return err(gatewayError('not_found_error', `No ${what} with that id.`));
}
