import { parseBody, updateKeyBody } from './requests';
import { keyResource } from './resources';
import { answer } from './route-kit';
import type { RouteKit } from './route-kit';

/** Editing a key's name and restrictions; what it may reach changes from its next request. */
export function registerKeyEditRoutes({ router, route, clients, visibleKey }: RouteKit): void {
  router.patch(
    '/keys/:id',
    route(async (request, principal) => {
      const body = parseBody(updateKeyBody, request.body);
      if (!body.ok) return body;
      const found = await visibleKey(principal, String(request.params.id));
      if (!found.ok) return found;
      const { name, allowed_models, allowed_ips, expires_at } = body.value;
      const list = (values: string[] | null | undefined) => (values ? { values } : undefined);
      const updated = await clients.adminAccess.updateKey({
        keyId: found.value.id,
        fields: Object.keys(body.value),
        name: name ?? '',
        allowedModels: list(allowed_models),
        allowedIps: list(allowed_ips),
        expiresAtUnixMs: expires_at ? BigInt(Date.parse(expires_at)) : undefined,
      });
      if (!updated.ok) return updated;
      const after = keyResource(updated.value.apiKey!);
      return answer(after, 200, {
        action: 'key.update',
        accountId: after.account_id,
        target: { kind: 'key', id: after.id },
        before: keyResource(updated.value.before!),
        after,
      });
    }),
  );
}
