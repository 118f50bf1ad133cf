import { adminApi } from '@gw/admin-api';
import { keyResource } from '../resources';
import { json, serve } from '../route-kit';
import { visibleKey } from '../visibility';

// A new key with the old one's settings, made by auth in one operation; the old one keeps working until
// it is revoked, so that callers can move over without an outage.
export const rotateKey = serve(adminApi.rotateKey, async ({ params }, { principal, clients }) => {
  const found = await visibleKey(clients, principal, params.id);
  if (!found.ok) return found;
  const rotated = await clients.auth.rotateKey({
    keyId: found.value.id,
    accountId: principal.kind === 'account' ? principal.accountId : undefined,
  });
  if (!rotated.ok) return rotated;
  const key = keyResource(rotated.value.apiKey!);
  const old = keyResource(rotated.value.replaced!);
  return json(
    { ...key, key: rotated.value.key, replaces: old.id },
    {
      action: 'key.rotate',
      accountId: key.account_id,
      target: { kind: 'key', id: key.id },
      before: old,
      after: key,
    },
  );
});
