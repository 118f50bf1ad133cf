import { adminApi } from '@gw/admin-api';
import { adminKeyResource } from '../resources';
import { json, serve } from '../route-kit';

// Immediate: admin keys are verified at every request, never from a cache. An account's admin may
// revoke any admin key of the account, its own included; auth refuses another account's.
export const revokeAdminKey = serve(adminApi.revokeAdminKey, async ({ params }, { principal, clients }) => {
  const revoked = await clients.adminAccess.revokeAdminKey({
    adminKeyId: params.id,
    accountId: principal.kind === 'account' ? principal.accountId : undefined,
  });
  if (!revoked.ok) return revoked;
  const after = adminKeyResource(revoked.value.adminKey!);
  return json(after, {
    action: 'admin_key.revoke',
    accountId: after.account_id,
    target: { kind: 'admin_key', id: after.id },
    before: null,
    after,
  });
});
