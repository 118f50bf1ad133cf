import { AllowList } from '@gw/addresses';
import type { InvalidEntry } from '@gw/addresses';
import { authenticationErrorMessage, err, gatewayError, ok, overloadRetryAfterMs, quoted } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import type { GatewayConfig } from '@gw/config';
import { newAccountId, newKeyId, randomBase62 } from '@gw/ids';
import type { AdminAccessStore, KeyChanges } from './admin-access-store';
import {
  checkAllowedIps,
  checkAllowedModels,
  checkExpiry,
  checkName,
  maxLiveAdminKeysPerAccount,
  maxLiveKeysPerAccount,
} from './input-rules';
import { hashesEqual, hashKey } from './key-format';
import type { KeyEnvironment, KeyFormat, KeyKind, Pepper } from './key-format';
import type { VerifiedKeyCache } from './key-cache';
import type { LastUsedRecorder } from './last-used';
import type { RevocationNotice } from '@gw/revocations';
import type { AccountRecord, AdminKeyRecord, AuthStore, KeyRecord, LimitOverrides, NewKey } from './store';

export interface VerifiedKey {
  key: KeyRecord;
  account: AccountRecord;
  /** The key's allowed_ips, parsed once per lookup; null: any address. */
  allowList: AllowList | null;
}

export interface NewKeyRequest {
  accountId: string;
  name: string;
  environment: KeyEnvironment;
  residency: KeyRecord['residency'];
  privacyMode: KeyRecord['privacyMode'];
  allowedModels: string[] | null;
  allowedIps: string[] | null;
  expiresAt: Date | null;
  /** Set by a rotation (rotateKey): the key this one replaces, of the same account. */
  replacesKeyId: string | null;
}

export interface VerifiedAdminKey {
  key: AdminKeyRecord;
  accountSuspended: boolean;
}

export interface KeyServiceDeps {
  store: AuthStore;
  accessStore: AdminAccessStore;
  format: KeyFormat;
  /** The first pepper signs new keys; all verify. */
  peppers: readonly Pepper[];
  config: GatewayConfig;
  cache: VerifiedKeyCache;
  lastUsed: LastUsedRecorder;
  /** A stored allow-list holds entries that match nothing (written before the notation rules). */
  reportUnusableAllowListEntries(keyId: string, entries: readonly InvalidEntry[]): void;
  /** Tells every ingress and auth replica that a key or an account changed; resolves once sent. */
  announce(notice: RevocationNotice): Promise<void>;
  now?: () => Date;
}

/** Why a key did not verify: for ingress's metrics only, the caller's answer is the same for every reason. */
export type KeyRefusalReason =
  'missing' | 'malformed' | 'unknown' | 'revoked' | 'expired' | 'suspended' | 'ip_not_allowed';

const unauthenticated = (reason?: KeyRefusalReason) =>
  err(gatewayError('authentication_error', authenticationErrorMessage, { reason }));
const invalid = (message: string) => err(gatewayError('invalid_request_error', message));
const noAccount = (id: string) => err(gatewayError('not_found_error', `No account with id ${quoted(id)}.`));
const noKey = (id: string) => err(gatewayError('not_found_error', `No key with id ${quoted(id)}.`));

type NumericLimit = Exclude<keyof LimitOverrides, 'overage'>;

interface NumericLimitRule {
  field: string;
  /** The largest value the column holds; requests and concurrency are 32-bit. */
  largest: number;
}

const numericLimits: Record<NumericLimit, NumericLimitRule> = {
  requestsPerMinute: { field: 'requests_per_minute', largest: 2_147_483_647 },
  concurrency: { field: 'concurrency', largest: 2_147_483_647 },
  monthlyTokens: { field: 'monthly_tokens', largest: Number.MAX_SAFE_INTEGER },
  hardCeilingTokens: { field: 'hard_ceiling_tokens', largest: Number.MAX_SAFE_INTEGER },
};

/** Accounts, API keys and admin keys: issuance, verification, revocation. Knows nothing of gRPC. */
export class KeyService {
  private readonly now: () => Date;

  constructor(private readonly deps: KeyServiceDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  /**
   * Every kind of bad key takes the same path (hash under each pepper, one indexed lookup) and gets
   * the same answer, so neither the body nor the timing tells unknown from revoked or expired. Only
   * active keys are cached, for the same reason.
   */
  async verify(presented: string, sourceAddress: string): Promise<Result<VerifiedKey>> {
    const { store, format, peppers, cache } = this.deps;
    const kind = format.kindOf(presented);
    const hashes = peppers.map((pepper) => hashKey(presented, pepper));
    const cacheKey = hashes[0]!.toString('hex');
    let found = cache.get(cacheKey);
    if (!found) {
      const stored = await store.findKeyByHashes(hashes);
      if (!stored || kind === undefined || kind === 'admin') {
        return unauthenticated(presented === '' ? 'missing' : kind === undefined ? 'malformed' : 'unknown');
      }
      const pepperIndex = peppers.findIndex((pepper) => pepper.id === stored.key.pepperId);
      if (pepperIndex < 0 || !hashesEqual(stored.key.keyHash, hashes[pepperIndex]!)) return unauthenticated('unknown');
      found = { ...stored, allowList: this.allowListOf(stored.key) };
    }
    if (found.key.revokedAt !== null) return unauthenticated('revoked');
    if (found.key.expiresAt !== null && found.key.expiresAt <= this.now()) return unauthenticated('expired');
    cache.set(cacheKey, found);
    if (found.account.suspendedAt !== null) {
      return err(
        gatewayError(
          'permission_error',
          'The account this API key belongs to is suspended. Contact your account administrator.',
          { reason: 'suspended' },
        ),
      );
    }
    if (found.allowList !== null && !found.allowList.admits(sourceAddress)) {
      return err(
        gatewayError('permission_error', 'This API key is not permitted to make this request.', {
          reason: 'ip_not_allowed',
        }),
      );
    }
    this.deps.lastUsed.record(found.key.id);
    return ok(found);
  }

  /**
   * Never cached: a revoked or expired admin key is refused at its next request. A suspended account's
   * key verifies, and the caller lets it read only.
   */
  async verifyAdminKey(presented: string): Promise<Result<VerifiedAdminKey>> {
    const { store, format, peppers } = this.deps;
    const hashes = peppers.map((pepper) => hashKey(presented, pepper));
    const found = await store.findAdminKeyByHashes(hashes);
    if (!found || format.kindOf(presented) !== 'admin') return unauthenticated();
    const { key } = found;
    if (key.revokedAt !== null || (key.expiresAt !== null && key.expiresAt <= this.now())) return unauthenticated();
    const pepperIndex = peppers.findIndex((pepper) => pepper.id === key.pepperId);
    if (pepperIndex < 0 || !hashesEqual(key.keyHash, hashes[pepperIndex]!)) return unauthenticated();
    this.deps.lastUsed.record(key.id);
    return ok(found);
  }

  async createAccount(name: string, plan: string): Promise<Result<AccountRecord>> {
    const checkedName = checkName(name);
    if (!checkedName.ok) return checkedName;
    if (!this.deps.config.plans.some((candidate) => candidate.id === plan)) {
      return invalid(`plan: unknown plan ${quoted(plan)}; expected one of ${this.planIds()}.`);
    }
    return ok(await this.deps.store.insertAccount({ id: newAccountId(), name: checkedName.value, plan }));
  }

  async getAccount(id: string): Promise<Result<AccountRecord>> {
    const account = await this.deps.store.findAccount(id);
    return account ? ok(account) : noAccount(id);
  }

  async listAccounts(onlyId?: string): Promise<Result<AccountRecord[]>> {
    if (onlyId === undefined) return ok(await this.deps.store.listAccounts());
    const account = await this.deps.store.findAccount(onlyId);
    return ok(account ? [account] : []);
  }

  /** Takes effect at once: every cached record of the account is dropped everywhere. */
  async setSuspended(accountId: string, suspended: boolean): Promise<Result<AccountRecord>> {
    const account = await this.deps.store.setSuspended(accountId, suspended);
    if (!account) return noAccount(accountId);
    await this.notify({ accountId });
    return ok(account);
  }

  async setLimits(accountId: string, limits: Partial<LimitOverrides>): Promise<Result<AccountRecord>> {
    if (Object.keys(limits).length === 0) {
      return invalid(
        'limits: expected at least one of requests_per_minute, concurrency, monthly_tokens, overage, hard_ceiling_tokens.',
      );
    }
    for (const [name, { field, largest }] of Object.entries(numericLimits) as [NumericLimit, NumericLimitRule][]) {
      const value = limits[name];
      if (typeof value === 'number' && !(Number.isSafeInteger(value) && value > 0 && value <= largest)) {
        return invalid(`${field}: expected a positive integer up to ${largest} or null.`);
      }
    }
    const account = await this.deps.store.setLimits(accountId, limits);
    if (!account) return noAccount(accountId);
    await this.notify({ accountId });
    return ok(account);
  }

  /** Returns the key value once; only its hash is kept. */
  async createKey(request: NewKeyRequest): Promise<Result<{ record: KeyRecord; key: string }>> {
    const checked = await this.checkNewKey(request);
    if (!checked.ok) return checked;
    const { key, newKey } = this.newKeyOf(request, checked.value);
    return ok({ record: await this.deps.store.insertKey(newKey), key });
  }

  /**
   * A new key with the settings of an unrevoked one, in one transaction holding the old key's row: a
   * revocation of the old key waits for the new one to exist, so that callers moving over always have a
   * key that works. The old key stays valid until it is revoked. With `accountId`, another account's
   * key is not found.
   */
  async rotateKey(
    keyId: string,
    accountId?: string,
  ): Promise<Result<{ replaced: KeyRecord; record: KeyRecord; key: string }>> {
    const rotated = await this.deps.store.withKeyLocked(keyId, async (old, insert) => {
      if (accountId !== undefined && old.accountId !== accountId) return noKey(keyId);
      if (old.revokedAt !== null) return invalid('This key is revoked; create a new key instead.');
      const request: NewKeyRequest = {
        accountId: old.accountId,
        name: old.name,
        environment: old.environment,
        residency: old.residency,
        privacyMode: old.privacyMode,
        allowedModels: old.allowedModels,
        allowedIps: old.allowedIps,
        expiresAt: old.expiresAt,
        replacesKeyId: old.id,
      };
      const checked = await this.checkNewKey(request);
      if (!checked.ok) return checked;
      const { key, newKey } = this.newKeyOf(request, checked.value);
      return ok({ replaced: old, record: await insert(newKey), key });
    });
    return rotated ?? noKey(keyId);
  }

  /** The rules a new key meets, whether created or made by rotation; returns its name as stored. */
  private async checkNewKey(request: NewKeyRequest): Promise<Result<string>> {
    const { store, config, accessStore } = this.deps;
    const account = await store.findAccount(request.accountId);
    if (!account) return noAccount(request.accountId);
    const plan = config.plans.find((candidate) => candidate.id === account.plan);
    if (!plan || !plan.residency.includes(request.residency)) {
      return invalid(
        `residency: the account's plan "${account.plan}" does not permit residency "${request.residency}".`,
      );
    }
    const checkedName = checkName(request.name);
    if (!checkedName.ok) return checkedName;
    const checks = [
      request.allowedIps === null ? ok(undefined) : checkAllowedIps(request.allowedIps),
      request.allowedModels === null ? ok(undefined) : checkAllowedModels(request.allowedModels),
      checkExpiry(request.expiresAt, this.now()),
    ];
    const failed = checks.find((check) => !check.ok);
    if (failed) return failed;
    if ((await accessStore.countLiveKeys(account.id)) >= maxLiveKeysPerAccount) {
      return invalid(
        `This account has ${maxLiveKeysPerAccount} keys that are neither revoked nor expired, the most it may have; revoke one first.`,
      );
    }
    const models = request.allowedModels ?? [];
    const unknownModel = models.findIndex((alias) => !config.models.some((model) => model.alias === alias));
    if (unknownModel >= 0) {
      return invalid(`allowed_models.${unknownModel}: unknown model ${quoted(models[unknownModel]!)}.`);
    }
    return ok(checkedName.value);
  }

  private newKeyOf(request: NewKeyRequest, name: string): { key: string; newKey: NewKey } {
    const { key, keyHash, pepperId, displayPrefix } = this.issue(request.environment);
    const newKey: NewKey = {
      id: newKeyId(),
      accountId: request.accountId,
      name,
      environment: request.environment,
      keyHash,
      pepperId,
      displayPrefix,
      residency: request.residency,
      privacyMode: request.privacyMode,
      allowedModels: request.allowedModels,
      allowedIps: request.allowedIps,
      expiresAt: request.expiresAt,
      replacesKeyId: request.replacesKeyId,
    };
    return { key, newKey };
  }

  async createAdminKey(
    accountId: string,
    name: string,
    expiresAt: Date | null = null,
  ): Promise<Result<{ record: AdminKeyRecord; key: string }>> {
    const account = await this.deps.store.findAccount(accountId);
    if (!account) return noAccount(accountId);
    const checkedName = checkName(name);
    if (!checkedName.ok) return checkedName;
    const expiry = checkExpiry(expiresAt, this.now());
    if (!expiry.ok) return expiry;
    if ((await this.deps.accessStore.countLiveAdminKeys(accountId)) >= maxLiveAdminKeysPerAccount) {
      return invalid(
        `This account has ${maxLiveAdminKeysPerAccount} admin keys that are neither revoked nor expired, the most it may have; revoke one first.`,
      );
    }
    const { key, keyHash, pepperId, displayPrefix } = this.issue('admin');
    const record = await this.deps.store.insertAdminKey({
      id: `adk_${randomBase62(20)}`,
      accountId,
      name: checkedName.value,
      keyHash,
      pepperId,
      displayPrefix,
      expiresAt,
    });
    return ok({ record, key });
  }

  /**
   * Changes a key's name and restrictions under the rules of its creation; every replica forgets the
   * key at once, so the new restrictions hold from the next request.
   */
  async updateKey(keyId: string, changes: KeyChanges): Promise<Result<{ before: KeyRecord; after: KeyRecord }>> {
    const before = await this.deps.store.findKey(keyId);
    if (!before) return noKey(keyId);
    if (before.revokedAt !== null) return invalid('This key is revoked; it cannot be changed.');
    const checked = { ...changes };
    if (changes.name !== undefined) {
      const name = checkName(changes.name);
      if (!name.ok) return name;
      checked.name = name.value;
    }
    const checks = [
      changes.allowedIps ? checkAllowedIps(changes.allowedIps) : ok(undefined),
      changes.allowedModels ? checkAllowedModels(changes.allowedModels) : ok(undefined),
      checkExpiry(changes.expiresAt ?? null, this.now()),
    ];
    const failed = checks.find((check) => !check.ok);
    if (failed) return failed;
    const models = changes.allowedModels ?? [];
    const unknownModel = models.findIndex((alias) => !this.deps.config.models.some((model) => model.alias === alias));
    if (unknownModel >= 0) {
      return invalid(`allowed_models.${unknownModel}: unknown model ${quoted(models[unknownModel]!)}.`);
    }
    if (Object.keys(checked).length === 0) {
      return invalid('Expected at least one of name, allowed_models, allowed_ips, expires_at.');
    }
    const after = await this.deps.accessStore.updateKey(keyId, checked);
    if (!after) return noKey(keyId);
    const failure = await this.notify({ keyId });
    return failure ?? ok({ before, after });
  }

  async getKey(keyId: string): Promise<Result<KeyRecord>> {
    const key = await this.deps.store.findKey(keyId);
    return key ? ok(key) : noKey(keyId);
  }

  async listKeys(accountId: string): Promise<Result<KeyRecord[]>> {
    if (!(await this.deps.store.findAccount(accountId))) return noAccount(accountId);
    return ok(await this.deps.store.listKeys(accountId));
  }

  /**
   * Immediate, also for requests in flight: the notice reaches every ingress before this returns.
   * Revoking a revoked key succeeds and changes nothing.
   */
  async revokeKey(keyId: string): Promise<Result<KeyRecord>> {
    const revoked = await this.deps.store.revokeKey(keyId);
    if (!revoked) return noKey(keyId);
    const failure = await this.notify({ keyId });
    return failure ?? ok(revoked);
  }

  /** Entries that match nothing are reported by key id; the rest of the list still applies. */
  private allowListOf(key: KeyRecord): AllowList | null {
    if (key.allowedIps === null) return null;
    const allowList = new AllowList(key.allowedIps);
    if (allowList.invalidEntries.length > 0) {
      this.deps.reportUnusableAllowListEntries(key.id, allowList.invalidEntries);
    }
    return allowList;
  }

  private issue(kind: KeyKind) {
    const pepper = this.deps.peppers[0]!;
    const { key, displayPrefix } = this.deps.format.issue(kind);
    return { key, keyHash: hashKey(key, pepper), pepperId: pepper.id, displayPrefix };
  }

  /** Drops local cache entries, then tells the other replicas; a lost notice is an error the caller sees. */
  private async notify(notice: RevocationNotice): Promise<Result<never> | undefined> {
    if ('keyId' in notice) this.deps.cache.dropKey(notice.keyId);
    else this.deps.cache.dropAccount(notice.accountId);
    try {
      await this.deps.announce(notice);
      return undefined;
    } catch {
      const failure: GatewayError = gatewayError(
        'overloaded_error',
        'The change is saved, but not every gateway replica could be told at once; it takes effect within seconds. Retry to confirm.',
        { retryAfterMs: overloadRetryAfterMs },
      );
      return err(failure);
    }
  }

  private planIds(): string {
    return this.deps.config.plans.map((plan) => plan.id).join(', ');
  }
}
