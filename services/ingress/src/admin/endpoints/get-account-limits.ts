import { adminApi } from '@gw/admin-api';
import { err, gatewayError } from '@gw/errors';
import { limitsResource } from '../limits';
import { requireAccount } from '../principal';
import { accountResource } from '../resources';
import { json, serve } from '../route-kit';

export const getAccountLimits = serve(adminApi.getAccountLimits, async ({ params }, { principal, clients, plans }) => {
  const accountId = params.id;
  const allowed = requireAccount(principal, accountId);
  if (!allowed.ok) return allowed;
  const found = await clients.auth.getAccount({ id: accountId });
  if (!found.ok) return found;
  const account = accountResource(found.value.account!);
  const plan = plans().find((candidate) => candidate.id === account.plan);
  if (!plan) return err(gatewayError('api_error', 'The account\u2019s plan is not in the gateway configuration.'));
  return json({ account_id: accountId, ...limitsResource(plan, account.limits) });
});
