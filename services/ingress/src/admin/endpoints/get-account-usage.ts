import { adminApi } from '@gw/admin-api';
import { accountUsage } from '../account-usage';
import { requireAccount } from '../principal';
import { json, serve } from '../route-kit';

export const getAccountUsage = serve(adminApi.getAccountUsage, async ({ params, query }, { principal, clients }) => {
  const allowed = requireAccount(principal, params.id);
  if (!allowed.ok) return allowed;
  const usage = await accountUsage(clients, params.id, query.environment, new Date());
  return usage.ok ? json(usage.value) : usage;
});
