import { authenticationErrorMessage, err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { GatewayConfig } from '@gw/config';
import { hashesEqual, hashKey } from './key-format';
import type { KeyEnvironment, KeyFormat, Pepper } from './key-format';
import { newAccountId, newKeyId } from '@gw/ids';
import { isAddressAllowed, parseAllowedEntry } from './source-address';
import type { AccountRecord, AuthStore, KeyRecord } from './store';

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

const unauthenticated = () => err(gatewayError('authentication_error', authenticationErrorMessage));

/** Accounts and keys: issuance, verification and revocation. Knows nothing of gRPC. */
export class KeyService {
  constructor(
    private readonly store: AuthStore,
    private readonly format: KeyFormat,
    private readonly peppers: readonly Pepper[],
    private readonly config: GatewayConfig,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * Every kind of bad key takes the same path (hash under each pepper, one indexed lookup) and gets
   * the same answer, so neither the body nor the timing tells unknown from revoked or expired.
   */
  async verify(presented: string, sourceAddress: string): Promise<Result<VerifiedKey>> {
    const wellFormed = this.format.environmentOf(presented) !== undefined;
    const hashes = this.peppers.map((pepper) => hashKey(presented, pepper));
    const found = await this.store.findKeyByHashes(hashes);
    if (!wellFormed || !found) return unauthenticated();
    const pepperIndex = this.peppers.findIndex((pepper) => pepper.id === found.key.pepperId);
    if (pepperIndex < 0 || !hashesEqual(found.key.keyHash, hashes[pepperIndex]!)) return unauthenticated();
    const now = this.now();
    if (found.key.revokedAt !== null || (found.key.expiresAt !== null && found.key.expiresAt <= now)) {
      return unauthenticated();
    }
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
    return ok(found);
  }

  async createAccount(name: string, plan: string): Promise<Result<AccountRecord>> {
    if (name.trim().length === 0)
      return err(gatewayError('invalid_request_error', 'name: expected a non-empty string.'));
    if (!this.config.plans.some((candidate) => candidate.id === plan)) {
      return err(gatewayError('invalid_request_error', `plan: unknown plan "${plan}".`));
    }
    return ok(await this.store.insertAccount({ id: newAccountId(), name: name.trim(), plan }));
  }

  async getAccount(id: string): Promise<Result<AccountRecord>> {
    const account = await this.store.findAccount(id);
    return account ? ok(account) : err(gatewayError('not_found_error', `No account with id "${id}".`));
  }

  /** Returns the key value once; only its hash is kept. */
  async createKey(request: NewKeyRequest): Promise<Result<{ record: KeyRecord; key: string }>> {
    const account = await this.store.findAccount(request.accountId);
    if (!account) return err(gatewayError('not_found_error', `No account with id "${request.accountId}".`));
    const plan = this.config.plans.find((candidate) => candidate.id === account.plan);
    if (!plan || !plan.residency.includes(request.residency)) {
      return err(
        gatewayError(
          'invalid_request_error',
          `residency: the account's plan "${account.plan}" does not permit residency "${request.residency}".`,
        ),
      );
    }
    if (request.name.trim().length === 0)
      return err(gatewayError('invalid_request_error', 'name: expected a non-empty string.'));
    const badAddress = request.allowedIps?.find((entry) => parseAllowedEntry(entry) === undefined);
    if (badAddress !== undefined) {
      return err(
        gatewayError(
          'invalid_request_error',
          `allowed_ips: "${badAddress}" is not an IPv4 or IPv6 address or CIDR range.`,
        ),
      );
    }
    const unknownModel = request.allowedModels?.find(
      (alias) => !this.config.models.some((model) => model.alias === alias),
    );
    if (unknownModel !== undefined) {
      return err(gatewayError('invalid_request_error', `allowed_models: unknown model "${unknownModel}".`));
    }
    const pepper = this.peppers[0]!;
    const { key, displayPrefix } = this.format.issue(request.environment);
    const record = await this.store.insertKey({
      id: newKeyId(),
      accountId: account.id,
      name: request.name.trim(),
      environment: request.environment,
      keyHash: hashKey(key, pepper),
      pepperId: pepper.id,
      displayPrefix,
      residency: request.residency,
      privacyMode: request.privacyMode,
      allowedModels: request.allowedModels,
      allowedIps: request.allowedIps,
      expiresAt: request.expiresAt,
    });
    return ok({ record, key });
  }

  async listKeys(accountId: string): Promise<Result<KeyRecord[]>> {
    return ok(await this.store.listKeys(accountId));
  }

  async revokeKey(keyId: string): Promise<Result<KeyRecord>> {
    const revoked = await this.store.revokeKey(keyId);
    return revoked ? ok(revoked) : err(gatewayError('not_found_error', `No key with id "${keyId}".`));
  }
}
