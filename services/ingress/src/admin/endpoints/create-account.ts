import { adminApi } from '@gw/admin-api';
import { accountResource } from '../resources';
import { json, serve } from '../route-kit';

export const createAccount = serve(adminApi.createAccount, async ({ body }, { clients }) => {
  const created = await clients.auth.createAccount(body);
  if (!created.ok) return created;
  const account = accountResource(created.value.account!);
  return json(account, {
    action: 'account.create',
    accountId: account.id,
    target: { kind: 'account', id: account.id },
    before: null,
    after: account,
  });
});
