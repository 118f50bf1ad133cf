import { adminApi } from '@gw/admin-api';
import { requireAccount } from '../principal';
import { adminKeyResource } from '../resources';
import { json, serve } from '../route-kit';

export const listAdminKeys = serve(adminApi.listAdminKeys, async ({ params, query }, { principal, clients }) => {
  const accountId = params.id;
  const allowed = requireAccount(principal, accountId);
  if (!allowed.ok) return allowed;
  const listed = await clients.adminAccess.listAdminKeys({
    accountId,
    page: { limit: query.limit, after: query.after },
  });
  if (!listed.ok) return listed;
  return json({
    data: listed.value.adminKeys.map((key) => adminKeyResource(key)),
    next_after: listed.value.nextAfter || null,
  });
});
