import { registration } from '@gw/grpc';
import { authv1, commonv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import { isConnectionFailure } from '@gw/db';
import { dependencyUnavailableError, err, gatewayError, ok, quoted } from '@gw/errors';
import type { Result } from '@gw/errors';
import { expectedOneOf, keyEnvironments, privacyModes, residencyTiers } from '@gw/vocabulary';
import {
  environmentFromProto,
  environmentToProto,
  privacyModeFromProto,
  privacyModeToProto,
  residencyFromProto,
  residencyToProto,
} from '@gw/vocabulary/proto';
import type { KeyEvents } from './key-events';
import type { KeyService, NewKeyRequest } from './keys';
import type { AccountRecord, AdminKeyRecord, KeyRecord, LimitOverrides } from './store';

const unixMs = (date: Date | null) => (date === null ? undefined : BigInt(date.getTime()));
const bigintOrUndefined = (value: number | null) => (value === null ? undefined : BigInt(value));

function overridesMessage(limits: LimitOverrides): MessageInitShape<typeof commonv1.LimitOverridesSchema> {
  return {
    requestsPerMinute: bigintOrUndefined(limits.requestsPerMinute),
    concurrency: bigintOrUndefined(limits.concurrency),
    monthlyTokens: bigintOrUndefined(limits.monthlyTokens),
    overage: limits.overage ?? undefined,
    hardCeilingTokens: bigintOrUndefined(limits.hardCeilingTokens),
  };
}

export function accountMessage(account: AccountRecord): MessageInitShape<typeof authv1.AccountSchema> {
  return {
    id: account.id,
    name: account.name,
    plan: account.plan,
    suspendedAtUnixMs: unixMs(account.suspendedAt),
    createdAtUnixMs: BigInt(account.createdAt.getTime()),
    limits: overridesMessage(account.limits),
  };
}

export function adminKeyMessage(key: AdminKeyRecord): MessageInitShape<typeof authv1.AdminKeySchema> {
  return {
    id: key.id,
    accountId: key.accountId,
    name: key.name,
    displayPrefix: key.displayPrefix,
    createdAtUnixMs: BigInt(key.createdAt.getTime()),
    expiresAtUnixMs: unixMs(key.expiresAt),
    lastUsedAtUnixMs: unixMs(key.lastUsedAt),
    revokedAtUnixMs: unixMs(key.revokedAt),
  };
}

/** The overrides a SetAccountLimits call names, by their proto field names; unset means clear. */
function limitOverrides(request: authv1.SetAccountLimitsRequest): Result<Partial<LimitOverrides>> {
  const limits = request.limits;
  const numberOrNull = (value: bigint | undefined) => (value === undefined ? null : Number(value));
  const byField: Record<string, () => Partial<LimitOverrides>> = {
    requests_per_minute: () => ({ requestsPerMinute: numberOrNull(limits?.requestsPerMinute) }),
    concurrency: () => ({ concurrency: numberOrNull(limits?.concurrency) }),
    monthly_tokens: () => ({ monthlyTokens: numberOrNull(limits?.monthlyTokens) }),
    overage: () => ({ overage: limits?.overage ?? null }),
    hard_ceiling_tokens: () => ({ hardCeilingTokens: numberOrNull(limits?.hardCeilingTokens) }),
  };
  const overrides: Partial<LimitOverrides> = {};
  for (const field of request.fields) {
    const pick = byField[field];
    if (!pick) return err(gatewayError('invalid_request_error', `limits: unknown field ${quoted(field)}.`));
    Object.assign(overrides, pick());
  }
  return ok(overrides);
}

export function keyMessage(key: KeyRecord): MessageInitShape<typeof authv1.ApiKeySchema> {
  return {
    id: key.id,
    accountId: key.accountId,
    name: key.name,
    environment: environmentToProto(key.environment),
    displayPrefix: key.displayPrefix,
    residency: residencyToProto(key.residency),
    privacyMode: privacyModeToProto(key.privacyMode),
    allowedModels: key.allowedModels === null ? undefined : { values: key.allowedModels },
    allowedIps: key.allowedIps === null ? undefined : { values: key.allowedIps },
    expiresAtUnixMs: unixMs(key.expiresAt),
    createdAtUnixMs: BigInt(key.createdAt.getTime()),
    lastUsedAtUnixMs: unixMs(key.lastUsedAt),
    revokedAtUnixMs: unixMs(key.revokedAt),
    replacesKeyId: key.replacesKeyId ?? undefined,
  };
}

function newKeyRequest(request: authv1.CreateKeyRequest): Result<NewKeyRequest> {
  const environment = environmentFromProto(request.environment);
  const residency = residencyFromProto(request.residency);
  const privacyMode = privacyModeFromProto(request.privacyMode);
  const invalid = (field: string, words: readonly string[]) =>
    err(gatewayError('invalid_request_error', `${field}: expected ${expectedOneOf(words, { quoted: false })}.`));
  if (!environment) return invalid('environment', keyEnvironments);
  if (!residency) return invalid('residency', residencyTiers);
  if (!privacyMode) return invalid('privacy_mode', privacyModes);
  return ok({
    accountId: request.accountId,
    name: request.name,
    environment,
    residency,
    privacyMode,
    allowedModels: request.allowedModels?.values ?? null,
    allowedIps: request.allowedIps?.values ?? null,
    expiresAt: request.expiresAtUnixMs === undefined ? null : new Date(Number(request.expiresAtUnixMs)),
    replacesKeyId: null,
  });
}

/** Every call needs the key store: one it cannot reach is an outage (503), the same as any other. */
export const keyStoreUnavailable = (error: unknown) =>
  isConnectionFailure(error) ? dependencyUnavailableError('key store') : undefined;

export function authService(keys: KeyService, keyEvents?: KeyEvents) {
  return registration(
    authv1.AuthService,
    {
      async verifyKey(request) {
        const verified = await keys.verify(request.key, request.sourceAddress);
        if (!verified.ok) return verified;
        const { key, account } = verified.value;
        return ok({
          key: {
            keyId: key.id,
            accountId: key.accountId,
            environment: environmentToProto(key.environment),
            residency: residencyToProto(key.residency),
            privacyMode: privacyModeToProto(key.privacyMode),
            allowedModels: key.allowedModels === null ? undefined : { values: key.allowedModels },
            plan: account.plan,
            expiresAtUnixMs: unixMs(key.expiresAt),
            limitOverrides: overridesMessage(account.limits),
          },
        });
      },
      async verifyAdminKey(request) {
        const verified = await keys.verifyAdminKey(request.key);
        if (!verified.ok) return verified;
        const { key, accountSuspended } = verified.value;
        return ok({ adminKeyId: key.id, accountId: key.accountId, accountSuspended });
      },
      async listAccounts(request) {
        const listed = await keys.listAccounts(request.accountId);
        return listed.ok ? ok({ accounts: listed.value.map(accountMessage) }) : listed;
      },
      async setAccountSuspended(request) {
        const changed = await keys.setSuspended(request.accountId, request.suspended);
        return changed.ok ? ok({ account: accountMessage(changed.value) }) : changed;
      },
      async setAccountLimits(request) {
        const overrides = limitOverrides(request);
        if (!overrides.ok) return overrides;
        const changed = await keys.setLimits(request.accountId, overrides.value);
        return changed.ok ? ok({ account: accountMessage(changed.value) }) : changed;
      },
      async createAdminKey(request) {
        const expiresAt = request.expiresAtUnixMs === undefined ? null : new Date(Number(request.expiresAtUnixMs));
        const created = await keys.createAdminKey(request.accountId, request.name, expiresAt);
        return created.ok ? ok({ adminKey: adminKeyMessage(created.value.record), key: created.value.key }) : created;
      },
      async getKey(request) {
        const found = await keys.getKey(request.keyId);
        return found.ok ? ok({ apiKey: keyMessage(found.value) }) : found;
      },
      async createAccount(request) {
        const created = await keys.createAccount(request.name, request.plan);
        return created.ok ? ok({ account: accountMessage(created.value) }) : created;
      },
      async getAccount(request) {
        const found = await keys.getAccount(request.id);
        return found.ok ? ok({ account: accountMessage(found.value) }) : found;
      },
      async createKey(request) {
        const parsed = newKeyRequest(request);
        if (!parsed.ok) return parsed;
        const created = await keys.createKey(parsed.value);
        return created.ok ? ok({ apiKey: keyMessage(created.value.record), key: created.value.key }) : created;
      },
      async listKeys(request) {
        const listed = await keys.listKeys(request.accountId);
        return listed.ok ? ok({ keys: listed.value.map(keyMessage) }) : listed;
      },
      async rotateKey(request) {
        const rotated = await keys.rotateKey(request.keyId, request.accountId);
        if (!rotated.ok) return rotated;
        const { replaced, record, key } = rotated.value;
        await keyEvents?.rotated(replaced.id, record);
        return ok({ apiKey: keyMessage(record), key, replaced: keyMessage(replaced) });
      },
      async revokeKey(request) {
        const revoked = await keys.revokeKey(request.keyId);
        if (revoked.ok) await keyEvents?.revoked(revoked.value);
        return revoked.ok ? ok({ apiKey: keyMessage(revoked.value) }) : revoked;
      },
    },
    { answerThrown: keyStoreUnavailable },
  );
}
