import { adminApi } from '@gw/admin-api';
import { keyResource } from '../resources';
import { json, serve } from '../route-kit';
import { visibleKey } from '../visibility';

const list = (values: string[] | null | undefined) => (values ? { values } : undefined);

/** A key's name and restrictions; what it may reach changes from its next request. */
export const updateKey = serve(adminApi.updateKey, async ({ params, body }, { principal, clients }) => {
  const found = await visibleKey(clients, principal, params.id);
  if (!found.ok) return found;
  const { name, allowed_models, allowed_ips, expires_at } = body;
  const updated = await clients.adminAccess.updateKey({
    keyId: found.value.id,
    fields: Object.keys(body),
    name: name ?? '',
    allowedModels: list(allowed_models),
    allowedIps: list(allowed_ips),
    expiresAtUnixMs: expires_at ? BigInt(Date.parse(expires_at)) : undefined,
  });
  if (!updated.ok) return updated;
  const after = keyResource(updated.value.apiKey!);
  return json(after, {
    action: 'key.update',
    accountId: after.account_id,
    target: { kind: 'key', id: after.id },
    before: keyResource(updated.value.before!),
    after,
  });
});
