import { adminApi } from '@gw/admin-api';
import { adminKeyResource } from '../resources';
import { json, serve } from '../route-kit';

/** The operator's (its declaration says so): an account's admins cannot make themselves more admin keys. */
export const createAdminKey = serve(adminApi.createAdminKey, async ({ params, body }, { clients }) => {
  const accountId = params.id;
  const created = await clients.auth.createAdminKey({
    accountId,
    name: body.name,
    expiresAtUnixMs: body.expires_at ? BigInt(Date.parse(body.expires_at)) : undefined,
  });
  if (!created.ok) return created;
  const adminKey = adminKeyResource(created.value.adminKey!);
  return json(
    { ...adminKey, key: created.value.key },
    {
      action: 'admin_key.create',
      accountId,
      target: { kind: 'admin_key', id: adminKey.id },
      before: null,
      after: adminKey,
    },
  );
});
