import { adminApi } from '@gw/admin-api';
import { keyResource } from '../resources';
import { json, serve } from '../route-kit';
import { visibleKey } from '../visibility';

export const getKey = serve(adminApi.getKey, async ({ params }, { principal, clients }) => {
  const found = await visibleKey(clients, principal, params.id);
  return found.ok ? json(keyResource(found.value)) : found;
});
