import { adminApi } from '@gw/admin-api';
import { commonv1 } from '@gw/proto';
import { requireAccount } from '../principal';
import { environmentToProto } from '@gw/vocabulary/proto';
import { keyResource } from '../resources';
import { json, serve } from '../route-kit';

export const listKeys = serve(adminApi.listKeys, async ({ query }, { principal, clients }) => {
  const allowed = requireAccount(principal, query.account_id);
  if (!allowed.ok) return allowed;
  const listed = await clients.adminAccess.searchKeys({
    accountId: query.account_id,
    page: { limit: query.limit, after: query.after },
    query: query.q,
    status: query.status,
    environment: query.environment === '' ? commonv1.Environment.UNSPECIFIED : environmentToProto(query.environment),
  });
  if (!listed.ok) return listed;
  return json({ data: listed.value.keys.map((key) => keyResource(key)), next_after: listed.value.nextAfter || null });
});
