import { adminApi } from '@gw/admin-api';
import { accountResource } from '../resources';
import { json, serve } from '../route-kit';

/** The operator sees every account; an admin key its own only. */
export const listAccounts = serve(adminApi.listAccounts, async ({ query }, { principal, clients }) => {
  const listed = await clients.adminAccess.searchAccounts({
    page: { limit: query.limit, after: query.after },
    accountId: principal.kind === 'account' ? principal.accountId : undefined,
    query: query.q,
    status: query.status,
  });
  if (!listed.ok) return listed;
  return json({ data: listed.value.accounts.map(accountResource), next_after: listed.value.nextAfter || null });
});
