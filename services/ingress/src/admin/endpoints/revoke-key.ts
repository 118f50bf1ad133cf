import { adminApi } from '@gw/admin-api';
import { keyResource } from '../resources';
import { json, serve } from '../route-kit';
import { visibleKey } from '../visibility';

/** At once, also for requests in flight; revoking a revoked key changes nothing. */
export const revokeKey = serve(adminApi.revokeKey, async ({ params }, { principal, clients }) => {
  const found = await visibleKey(clients, principal, params.id);
  if (!found.ok) return found;
  const revoked = await clients.auth.revokeKey({ keyId: found.value.id });
  if (!revoked.ok) return revoked;
  const after = keyResource(revoked.value.apiKey!);
  return json(after, {
    action: 'key.revoke',
    accountId: after.account_id,
    target: { kind: 'key', id: after.id },
    before: keyResource(found.value),
    after,
  });
});
