import { adminApi } from '@gw/admin-api';
import { requireAccount } from '../principal';
import { environmentToProto, privacyModeToProto, residencyToProto } from '@gw/vocabulary/proto';
import { keyResource } from '../resources';
import { json, serve } from '../route-kit';

const list = (values: string[] | null | undefined) => (values ? { values } : undefined);

export const createKey = serve(adminApi.createKey, async ({ body }, { principal, clients }) => {
  const allowed = requireAccount(principal, body.account_id);
  if (!allowed.ok) return allowed;
  const created = await clients.auth.createKey({
    accountId: body.account_id,
    name: body.name,
    environment: environmentToProto(body.environment),
    residency: residencyToProto(body.residency),
    privacyMode: privacyModeToProto(body.privacy_mode),
    allowedModels: list(body.allowed_models),
    allowedIps: list(body.allowed_ips),
    expiresAtUnixMs: body.expires_at ? BigInt(Date.parse(body.expires_at)) : undefined,
  });
  if (!created.ok) return created;
  const key = keyResource(created.value.apiKey!);
  return json(
    { ...key, key: created.value.key },
    {
      action: 'key.create',
      accountId: key.account_id,
      target: { kind: 'key', id: key.id },
      before: null,
      after: key,
    },
  );
});
