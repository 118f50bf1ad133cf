import { adminApi } from '@gw/admin-api';
import type { AuditEntry } from '@gw/admin-api';
import type { adminaccessv1 } from '@gw/proto';
import { requireAccount } from '../principal';
import { json, serve } from '../route-kit';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

/** An entry as the API shows it: the hashed entry's fields (checked on the way out), its place in the chain and the hashes. */
function auditEntryResource(entry: adminaccessv1.AuditEntry): AuditEntry {
  return {
    seq: Number(entry.seq),
    ...(JSON.parse(entry.entryJson) as Omit<AuditEntry, 'seq' | 'prev_hash' | 'hash'>),
    prev_hash: hex(entry.prevHash),
    hash: hex(entry.hash),
  };
}

/** Each account's admins read their account's entries; the operator all, or one account's. */
export const listAudit = serve(adminApi.listAudit, async ({ query }, { principal, clients }) => {
  const accountId = query.account_id ?? (principal.kind === 'account' ? principal.accountId : undefined);
  if (accountId !== undefined) {
    const allowed = requireAccount(principal, accountId);
    if (!allowed.ok) return allowed;
  }
  const listed = await clients.adminAccess.listAudit({
    accountId,
    limit: query.limit,
    beforeSeq: BigInt(query.before),
    actionPrefix: query.action,
  });
  if (!listed.ok) return listed;
  return json({
    data: listed.value.entries.map(auditEntryResource),
    next_before: listed.value.nextBeforeSeq > 0n ? Number(listed.value.nextBeforeSeq) : null,
  });
});
