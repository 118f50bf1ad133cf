import { adminApi } from '@gw/admin-api';
import { requireAccount } from '../principal';
import { accountResource } from '../resources';
import { json, serve } from '../route-kit';

export const getAccount = serve(adminApi.getAccount, async ({ params }, { principal, clients }) => {
  const allowed = requireAccount(principal, params.id);
  if (!allowed.ok) return allowed;
  const found = await clients.auth.getAccount({ id: params.id });
  return found.ok ? json(accountResource(found.value.account!)) : found;
});
