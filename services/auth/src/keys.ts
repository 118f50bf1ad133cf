import { isAddressAllowed, parseAllowedEntry } from '@gw/addresses';
import { authenticationErrorMessage, err, gatewayError, ok } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import type { GatewayConfig } from '@gw/config';
import { newAccountId, newKeyId, randomBase62 } from '@gw/ids';
import { hashesEqual, hashKey } from './key-format';
import type { KeyEnvironment, KeyFormat, Pepper } from './key-format';
import type { VerifiedKeyCache } from './key-cache';
import type { LastUsedRecorder } from './last-used';
import type { RevocationNotice } from '@gw/revocations';
import type { AccountRecord, AdminKeyRecord, AuthStore, KeyRecord, LimitOverrides } from './store';

export interface VerifiedKey {
  key: KeyRecord;
  account: AccountRecord;
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
}

export interface KeyServiceDeps {
  store: AuthStore;
  format: KeyFormat;
  /** The first pepper signs new keys; all verify. */
  peppers: readonly Pepper[];
  config: GatewayConfig;
  cache: VerifiedKeyCache;
  lastUsed: LastUsedRecorder;
  /** Tells every ingress and auth replica that a key or an account changed; resolves once sent. */
  announce(notice: RevocationNotice): Promise<void>;
  now?: () => Date;
}

const unauthenticated = () => err(gatewayError('authentication_error', authenticationErrorMessage));
const invalid = (message: string) => err(gatewayError('invalid_request_error', message));
const noAccount = (id: string) => err(gatewayError('not_found_error', `No account with id "${id}".`));

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
      found = await store.findKeyByHashes(hashes);
      if (!found || kind === undefined || kind === 'admin') return unauthenticated();
      const pepperIndex = peppers.findIndex((pepper) => pepper.id === found!.key.pepperId);
      if (pepperIndex < 0 || !hashesEqual(found.key.keyHash, hashes[pepperIndex]!)) return unauthenticated();
    }
    if (found.key.revokedAt !== null || (found.key.expiresAt !== null && found.key.expiresAt <= this.now())) {
      return unauthenticated();
    }
    cache.set(cacheKey, found);
    if (found.account.suspendedAt !== null) {
      return err(
        gatewayError(
          'permission_error',
          'The account this API key belongs to is suspended. Contact your account administrator.',
        ),
      );
    }
    if (found.key.allowedIps !== null && !isAddressAllowed(sourceAddress, found.key.allowedIps)) {
      return err(gatewayError('permission_error', 'This API key is not permitted to make this request.'));
    }
    this.deps.lastUsed.record(found.key.id);
    return ok(found);
  }

  async verifyAdminKey(presented: string): Promise<Result<AdminKeyRecord>> {
    const { store, format, peppers } = this.deps;
    const hashes = peppers.map((pepper) => hashKey(presented, pepper));
    const found = await store.findAdminKeyByHashes(hashes);
    if (!found || format.kindOf(presented) !== 'admin' || found.revokedAt !== null) return unauthenticated();
    const pepperIndex = peppers.findIndex((pepper) => pepper.id === found.pepperId);
    if (pepperIndex < 0 || !hashesEqual(found.keyHash, hashes[pepperIndex]!)) return unauthenticated();
    return ok(found);
  }

  async createAccount(name: string, plan: string): Promise<Result<AccountRecord>> {
    if (name.trim().length === 0) return invalid('name: expected a non-empty string.');
    if (!this.deps.config.plans.some((candidate) => candidate.id === plan)) {
      return invalid(`plan: unknown plan "${plan}"; expected one of ${this.planIds()}.`);
    }
    return ok(await this.deps.store.insertAccount({ id: newAccountId(), name: name.trim(), plan }));
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
    for (const [name, value] of Object.entries(limits)) {
      if (typeof value === 'number' && !(Number.isSafeInteger(value) && value > 0)) {
        return invalid(`${name}: expected a positive integer or null.`);
      }
    }
    const account = await this.deps.store.setLimits(accountId, limits);
    if (!account) return noAccount(accountId);
    await this.notify({ accountId });
    return ok(account);
  }

  /** Returns the key value once; only its hash is kept. */
  async createKey(request: NewKeyRequest): Promise<Result<{ record: KeyRecord; key: string }>> {
    const { store, config } = this.deps;
    const account = await store.findAccount(request.accountId);
    if (!account) return noAccount(request.accountId);
    const plan = config.plans.find((candidate) => candidate.id === account.plan);
    if (!plan || !plan.residency.includes(request.residency)) {
      return invalid(
        `residency: the account's plan "${account.plan}" does not permit residency "${request.residency}".`,
      );
    }
    if (request.name.trim().length === 0) return invalid('name: expected a non-empty string.');
    const badAddress = request.allowedIps?.find((entry) => parseAllowedEntry(entry) === undefined);
    if (badAddress !== undefined) {
      return invalid(`allowed_ips: "${badAddress}" is not an IPv4 or IPv6 address or CIDR range.`);
    }
    const unknownModel = request.allowedModels?.find((alias) => !config.models.some((model) => model.alias === alias));
    if (unknownModel !== undefined) return invalid(`allowed_models: unknown model "${unknownModel}".`);
    if (request.expiresAt !== null && Number.isNaN(request.expiresAt.getTime())) {
      return invalid('expires_at: expected an ISO 8601 timestamp.');
    }
    const { key, keyHash, pepperId, displayPrefix } = this.issue(request.environment);
    const record = await store.insertKey({
      id: newKeyId(),
      accountId: account.id,
      name: request.name.trim(),
      environment: request.environment,
      keyHash,
      pepperId,
      displayPrefix,
      residency: request.residency,
      privacyMode: request.privacyMode,
      allowedModels: request.allowedModels,
      allowedIps: request.allowedIps,
      expiresAt: request.expiresAt,
    });
    return ok({ record, key });
  }

  async createAdminKey(accountId: string, name: string): Promise<Result<{ record: AdminKeyRecord; key: string }>> {
    const account = await this.deps.store.findAccount(accountId);
    if (!account) return noAccount(accountId);
    if (name.trim().length === 0) return invalid('name: expected a non-empty string.');
    const { key, keyHash, pepperId, displayPrefix } = this.issue('admin');
    const record = await this.deps.store.insertAdminKey({
      id: `adk_${randomBase62(20)}`,
      accountId,
      name: name.trim(),
      keyHash,
      pepperId,
      displayPrefix,
    });
    return ok({ record, key });
  }

  async getKey(keyId: string): Promise<Result<KeyRecord>> {
    const key = await this.deps.store.findKey(keyId);
    return key ? ok(key) : err(gatewayError('not_found_error', `No key with id "${keyId}".`));
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
    if (!revoked) return err(gatewayError('not_found_error', `No key with id "${keyId}".`));
    const failure = await this.notify({ keyId });
    return failure ?? ok(revoked);
  }

  private issue(kind: 'live' | 'test' | 'admin') {
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
        { retryAfterMs: 1000 },
      );
      return err(failure);
    }
  }

  private planIds(): string {
    return this.deps.config.plans.map((plan) => plan.id).join(', ');
  }
}
