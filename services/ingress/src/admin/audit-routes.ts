import { err, gatewayError } from '@gw/errors';
import type { adminaccessv1 } from '@gw/proto';
import { maxListLimit } from './list-query';
import { requireAccount, requireOperator } from './principal';
import { answer } from './route-kit';
import type { RouteKit } from './route-kit';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

/** An entry as the API shows it: the hashed entry's fields, its place in the chain and the hashes. */
function auditEntryResource(entry: adminaccessv1.AuditEntry) {
  return {
    seq: Number(entry.seq),
    ...(JSON.parse(entry.entryJson) as Record<string, unknown>),
    prev_hash: hex(entry.prevHash),
    hash: hex(entry.hash),
  };
}

const invalid = (message: string) => err(gatewayError('invalid_request_error', message));

/** The audit log: read by each account's admins for their account and by the operator for all. */
export function registerAuditRoutes({ router, route, clients }: RouteKit): void {
  const { adminAccess } = clients;

  router.get(
    '/audit',
    route(async (request, principal) => {
      const { account_id: accountParameter, limit = '50', before = '0', action = '' } = request.query;
      if ([accountParameter, limit, before, action].some((value) => value !== undefined && typeof value !== 'string')) {
        return invalid('Each query parameter takes one value.');
      }
      const accountId =
        typeof accountParameter === 'string'
          ? accountParameter
          : principal.kind === 'account'
            ? principal.accountId
            : undefined;
      if (accountId !== undefined) {
        const allowed = requireAccount(principal, accountId);
        if (!allowed.ok) return allowed;
      }
      const limitValue = Number(limit);
      if (!/^\d{1,3}$/.test(String(limit)) || limitValue < 1 || limitValue > maxListLimit) {
        return invalid(`limit: expected a whole number from 1 to ${maxListLimit}.`);
      }
      if (!/^\d{1,15}$/.test(String(before))) return invalid('before: expected the next_before of a previous page.');
      if (!/^[a-z_.]{0,64}$/.test(String(action))) return invalid('action: expected an action or its start, e.g. key.');
      const listed = await adminAccess.listAudit({
        accountId,
        limit: limitValue,
        beforeSeq: BigInt(String(before)),
        actionPrefix: String(action),
      });
      if (!listed.ok) return listed;
      return answer({
        data: listed.value.entries.map(auditEntryResource),
        next_before: listed.value.nextBeforeSeq > 0n ? Number(listed.value.nextBeforeSeq) : null,
      });
    }),
  );

  router.get(
    '/audit/verify',
    route(async (_request, principal) => {
      const allowed = requireOperator(principal);
      if (!allowed.ok) return allowed;
      const verified = await adminAccess.verifyAudit({});
      if (!verified.ok) return verified;
      const result = verified.value;
      return answer({
        valid: result.valid,
        entries_checked: Number(result.entriesChecked),
        head: { seq: Number(result.headSeq), hash: hex(result.headHash) },
        published_head:
          result.publishedSeq > 0n ? { seq: Number(result.publishedSeq), hash: hex(result.publishedHash) } : null,
        failure: result.valid ? null : { seq: Number(result.failedAtSeq), reason: result.failure },
      });
    }),
  );
}
