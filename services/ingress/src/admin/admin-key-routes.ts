import { listQuery } from './list-query';
import { requireAccount } from './principal';
import { adminKeyResource } from './resources';
import { answer } from './route-kit';
import type { RouteKit } from './route-kit';

/** Admin keys' list and revocation; creation is the operator's, with the account routes. */
export function registerAdminKeyRoutes({ router, route, clients }: RouteKit): void {
  const { adminAccess } = clients;

  router.get(
    '/accounts/:id/admin-keys',
    route(async (request, principal) => {
      const accountId = String(request.params.id);
      const allowed = requireAccount(principal, accountId);
      if (!allowed.ok) return allowed;
      const query = listQuery(request.query, []);
      if (!query.ok) return query;
      const listed = await adminAccess.listAdminKeys({ accountId, page: query.value.page });
      if (!listed.ok) return listed;
      return answer({
        data: listed.value.adminKeys.map((key) => adminKeyResource(key)),
        next_after: listed.value.nextAfter || null,
      });
    }),
  );

  // Immediate: admin keys are verified at every request, never from a cache. An account's admin may
  // revoke any admin key of the account, its own included.
  router.post(
    '/admin-keys/:id/revoke',
    route(async (request, principal) => {
      const revoked = await adminAccess.revokeAdminKey({
        adminKeyId: String(request.params.id),
        accountId: principal.kind === 'account' ? principal.accountId : undefined,
      });
      if (!revoked.ok) return revoked;
      const after = adminKeyResource(revoked.value.adminKey!);
      return answer(after, 200, {
        action: 'admin_key.revoke',
        accountId: after.account_id,
        target: { kind: 'admin_key', id: after.id },
        before: null,
        after,
      });
    }),
  );
}
