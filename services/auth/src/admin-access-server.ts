import { registration } from '@gw/grpc';
import { adminaccessv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { environmentFromProto } from '@gw/vocabulary/proto';
import type { AdminAccessStore, KeyChanges, Page } from './admin-access-store';
import type { StoredEntry } from './audit-chain';
import type { AuditLog } from './audit-log';
import type { KeyService } from './keys';
import { accountMessage, adminKeyMessage, keyMessage, keyStoreUnavailable } from './server';

/** Items in a page when the caller names no limit, and the most it may ask for. */
export const defaultPageLimit = 50;
export const maxPageLimit = 200;

const invalid = (message: string) => err(gatewayError('invalid_request_error', message));

function pageOf(request: { limit: number; after: string } | undefined): Result<Page> {
  const limit = request?.limit || defaultPageLimit;
  if (limit > maxPageLimit) return invalid(`limit: expected at most ${maxPageLimit}.`);
  return ok({ limit, after: request?.after ?? '' });
}

const keyStatuses = new Set(['', 'active', 'revoked', 'expired']);
const accountStatuses = new Set(['', 'active', 'suspended']);
const maxQueryChars = 100;

function entryMessage(entry: StoredEntry): MessageInitShape<typeof adminaccessv1.AuditEntrySchema> {
  return { seq: BigInt(entry.seq), entryJson: entry.entryJson, prevHash: entry.prevHash, hash: entry.hash };
}

/** The edits an UpdateKey call names; a named list or expiry left unset clears it. */
function keyChanges(request: adminaccessv1.UpdateKeyRequest): Result<KeyChanges> {
  const byField: Record<string, () => KeyChanges> = {
    name: () => ({ name: request.name }),
    allowed_models: () => ({ allowedModels: request.allowedModels?.values ?? null }),
    allowed_ips: () => ({ allowedIps: request.allowedIps?.values ?? null }),
    expires_at: () => ({
      expiresAt: request.expiresAtUnixMs === undefined ? null : new Date(Number(request.expiresAtUnixMs)),
    }),
  };
  const changes: KeyChanges = {};
  for (const field of request.fields) {
    const pick = byField[field];
    if (!pick) return invalid(`fields: unknown field; expected name, allowed_models, allowed_ips or expires_at.`);
    Object.assign(changes, pick());
  }
  return ok(changes);
}

export interface AdminAccessDeps {
  keys: KeyService;
  store: AdminAccessStore;
  audit: AuditLog;
}

export function adminAccessService({ keys, store, audit }: AdminAccessDeps) {
  return registration(
    adminaccessv1.AdminAccessService,
    {
      async searchAccounts(request) {
        const page = pageOf(request.page);
        if (!page.ok) return page;
        if (!accountStatuses.has(request.status)) return invalid('status: expected active or suspended.');
        if (request.query.length > maxQueryChars) return invalid(`q: expected at most ${maxQueryChars} characters.`);
        const status = request.status as '' | 'active' | 'suspended';
        const found = await store.searchAccounts(
          { onlyId: request.accountId, query: request.query, status },
          page.value,
        );
        return ok({ accounts: found.items.map(accountMessage), nextAfter: found.nextAfter });
      },
      async searchKeys(request) {
        const page = pageOf(request.page);
        if (!page.ok) return page;
        if (!keyStatuses.has(request.status)) return invalid('status: expected active, revoked or expired.');
        if (request.query.length > maxQueryChars) return invalid(`q: expected at most ${maxQueryChars} characters.`);
        const account = await keys.getAccount(request.accountId);
        if (!account.ok) return account;
        const environment = environmentFromProto(request.environment);
        const status = request.status as '' | 'active' | 'revoked' | 'expired';
        const found = await store.searchKeys(
          request.accountId,
          { query: request.query, status, environment },
          page.value,
        );
        return ok({ keys: found.items.map(keyMessage), nextAfter: found.nextAfter });
      },
      async updateKey(request) {
        const changes = keyChanges(request);
        if (!changes.ok) return changes;
        const updated = await keys.updateKey(request.keyId, changes.value);
        if (!updated.ok) return updated;
        return ok({ before: keyMessage(updated.value.before), apiKey: keyMessage(updated.value.after) });
      },
      async listAdminKeys(request) {
        const page = pageOf(request.page);
        if (!page.ok) return page;
        const account = await keys.getAccount(request.accountId);
        if (!account.ok) return account;
        const found = await store.listAdminKeys(request.accountId, page.value);
        return ok({ adminKeys: found.items.map(adminKeyMessage), nextAfter: found.nextAfter });
      },
      async revokeAdminKey(request) {
        const revoked = await store.revokeAdminKey(request.adminKeyId, request.accountId);
        if (!revoked) return err(gatewayError('not_found_error', 'No admin key with that id.'));
        return ok({ adminKey: adminKeyMessage(revoked) });
      },
      async appendAudit(request) {
        const recorded = await audit.record({ ...request, accountId: request.accountId });
        return recorded.ok ? ok({ entry: entryMessage(recorded.value) }) : recorded;
      },
      async listAudit(request) {
        const limit = request.limit || defaultPageLimit;
        if (limit > maxPageLimit) return invalid(`limit: expected at most ${maxPageLimit}.`);
        if (request.actionPrefix.length > maxQueryChars) return invalid('action: expected an action or its start.');
        const entries = await audit.list({
          accountId: request.accountId,
          beforeSeq: Number(request.beforeSeq),
          actionPrefix: request.actionPrefix,
          limit: limit + 1,
        });
        const more = entries.length > limit;
        const kept = more ? entries.slice(0, limit) : entries;
        return ok({
          entries: kept.map(entryMessage),
          nextBeforeSeq: more ? BigInt(kept[kept.length - 1]!.seq) : 0n,
        });
      },
      async verifyAudit() {
        const result = await audit.verify();
        return ok({
          valid: result.valid,
          entriesChecked: BigInt(result.entriesChecked),
          headSeq: BigInt(result.head.seq),
          headHash: result.head.hash,
          publishedSeq: BigInt(result.published?.seq ?? 0),
          publishedHash: result.published?.hash ?? new Uint8Array(),
          failedAtSeq: BigInt(result.failure?.seq ?? 0),
          failure: result.failure?.reason ?? '',
        });
      },
    },
    { answerThrown: keyStoreUnavailable },
  );
}
