import type { Account } from '@gw/admin-api';
import type { Result } from '@gw/errors';
import { accountResource } from '../resources';
import { json } from '../route-kit';
import type { RouteAnswer, RouteContext } from '../route-kit';

/** Suspends or resumes an account (the auth service decides), recording the account before and after. */
export async function setSuspended(
  accountId: string,
  { clients }: RouteContext,
  suspended: boolean,
): Promise<Result<RouteAnswer<Account>>> {
  const before = await clients.auth.getAccount({ id: accountId });
  if (!before.ok) return before;
  const changed = await clients.auth.setAccountSuspended({ accountId, suspended });
  if (!changed.ok) return changed;
  const after = accountResource(changed.value.account!);
  return json(after, {
    action: suspended ? 'account.suspend' : 'account.resume',
    accountId,
    target: { kind: 'account', id: accountId },
    before: accountResource(before.value.account!),
    after,
  });
}
