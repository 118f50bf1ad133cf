import { inTransaction } from '@gw/db';
import type { Pool, PoolClient } from '@gw/db';
import type { KeyEnvironment } from './key-format';
import type { PrivacyMode, ResidencyTier } from '@gw/vocabulary';

/** An account's overrides of its plan's limits; null takes the plan's value. */
export interface LimitOverrides {
  requestsPerMinute: number | null;
  concurrency: number | null;
  monthlyTokens: number | null;
  overage: boolean | null;
  hardCeilingTokens: number | null;
}

export interface AccountRecord {
  id: string;
  name: string;
  plan: string;
  suspendedAt: Date | null;
  createdAt: Date;
  limits: LimitOverrides;
}

export interface AdminKeyRecord {
  id: string;
  accountId: string;
  name: string;
  keyHash: Buffer;
  pepperId: string;
  displayPrefix: string;
  createdAt: Date;
  revokedAt: Date | null;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
}

export interface KeyRecord {
  id: string;
  accountId: string;
  name: string;
  environment: KeyEnvironment;
  keyHash: Buffer;
  pepperId: string;
  displayPrefix: string;
  residency: ResidencyTier;
  privacyMode: PrivacyMode;
  allowedModels: string[] | null;
  allowedIps: string[] | null;
  expiresAt: Date | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  /** The key this one replaced, when it was made by rotation. */
  replacesKeyId: string | null;
}

export type NewKey = Omit<KeyRecord, 'createdAt' | 'lastUsedAt' | 'revokedAt'>;

export const keyColumns = `id, account_id, name, environment, key_hash, pepper_id, display_prefix, residency,
  privacy_mode, allowed_models, allowed_ips, expires_at, created_at, last_used_at, revoked_at, replaces_key_id`;

interface KeyRow {
  id: string;
  account_id: string;
  name: string;
  environment: KeyEnvironment;
  key_hash: Buffer;
  pepper_id: string;
  display_prefix: string;
  residency: ResidencyTier;
  privacy_mode: PrivacyMode;
  allowed_models: string[] | null;
  allowed_ips: string[] | null;
  expires_at: Date | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
  replaces_key_id: string | null;
}

export function toKey(row: KeyRow): KeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    environment: row.environment,
    keyHash: row.key_hash,
    pepperId: row.pepper_id,
    displayPrefix: row.display_prefix,
    residency: row.residency,
    privacyMode: row.privacy_mode,
    allowedModels: row.allowed_models,
    allowedIps: row.allowed_ips,
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
    replacesKeyId: row.replaces_key_id,
  };
}

export interface AccountRow {
  id: string;
  name: string;
  plan: string;
  suspended_at: Date | null;
  created_at: Date;
  limit_requests_per_minute: number | null;
  limit_concurrency: number | null;
  limit_monthly_tokens: string | null;
  limit_overage: boolean | null;
  limit_hard_ceiling_tokens: string | null;
}

export const accountColumns = `id, name, plan, suspended_at, created_at, limit_requests_per_minute, limit_concurrency,
  limit_monthly_tokens, limit_overage, limit_hard_ceiling_tokens`;

const bigintOrNull = (value: string | null) => (value === null ? null : Number(value));

export function toAccount(row: AccountRow): AccountRecord {
  return {
    id: row.id,
    name: row.name,
    plan: row.plan,
    suspendedAt: row.suspended_at,
    createdAt: row.created_at,
    limits: {
      requestsPerMinute: row.limit_requests_per_minute,
      concurrency: row.limit_concurrency,
      monthlyTokens: bigintOrNull(row.limit_monthly_tokens),
      overage: row.limit_overage,
      hardCeilingTokens: bigintOrNull(row.limit_hard_ceiling_tokens),
    },
  };
}

/** Column of each override, for partial updates. */
const limitColumns: Record<keyof LimitOverrides, string> = {
  requestsPerMinute: 'limit_requests_per_minute',
  concurrency: 'limit_concurrency',
  monthlyTokens: 'limit_monthly_tokens',
  overage: 'limit_overage',
  hardCeilingTokens: 'limit_hard_ceiling_tokens',
};

interface AdminKeyRow {
  id: string;
  account_id: string;
  name: string;
  key_hash: Buffer;
  pepper_id: string;
  display_prefix: string;
  created_at: Date;
  revoked_at: Date | null;
  expires_at: Date | null;
  last_used_at: Date | null;
}

export function toAdminKey(row: AdminKeyRow): AdminKeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    keyHash: row.key_hash,
    pepperId: row.pepper_id,
    displayPrefix: row.display_prefix,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
    expiresAt: row.expires_at,
    lastUsedAt: row.last_used_at,
  };
}

/**
 * Every id the gateway issues is a prefix and base62 characters. Anything else cannot be stored, so it
 * is not found without a query (PostgreSQL would refuse a NUL outright).
 */
export const issuableId = /^[A-Za-z0-9_]{1,64}$/;

/** Accounts and keys in PostgreSQL. Only hashes of keys are ever written. */
export class AuthStore {
  constructor(private readonly pool: Pool) {}

  async insertAccount(account: Pick<AccountRecord, 'id' | 'name' | 'plan'>): Promise<AccountRecord> {
    const { rows } = await this.pool.query<AccountRow>(
      `INSERT INTO accounts (id, name, plan) VALUES ($1, $2, $3) RETURNING ${accountColumns}`,
      [account.id, account.name, account.plan],
    );
    return toAccount(rows[0]!);
  }

  async findAccount(id: string): Promise<AccountRecord | undefined> {
    if (!issuableId.test(id)) return undefined;
    const { rows } = await this.pool.query<AccountRow>(`SELECT ${accountColumns} FROM accounts WHERE id = $1`, [id]);
    return rows[0] && toAccount(rows[0]);
  }

  async listAccounts(): Promise<AccountRecord[]> {
    const { rows } = await this.pool.query<AccountRow>(
      `SELECT ${accountColumns} FROM accounts ORDER BY created_at, id`,
    );
    return rows.map(toAccount);
  }

  /** Suspends or resumes; the instant of an existing suspension is kept. */
  async setSuspended(id: string, suspended: boolean): Promise<AccountRecord | undefined> {
    if (!issuableId.test(id)) return undefined;
    const { rows } = await this.pool.query<AccountRow>(
      `UPDATE accounts SET suspended_at = CASE WHEN $2 THEN COALESCE(suspended_at, now()) ELSE NULL END
       WHERE id = $1 RETURNING ${accountColumns}`,
      [id, suspended],
    );
    return rows[0] && toAccount(rows[0]);
  }

  /** Sets the named overrides only. */
  async setLimits(id: string, limits: Partial<LimitOverrides>): Promise<AccountRecord | undefined> {
    if (!issuableId.test(id)) return undefined;
    const names = Object.keys(limits) as (keyof LimitOverrides)[];
    const assignments = names.map((name, index) => `${limitColumns[name]} = $${index + 2}`);
    const { rows } = await this.pool.query<AccountRow>(
      `UPDATE accounts SET ${assignments.join(', ')} WHERE id = $1 RETURNING ${accountColumns}`,
      [id, ...names.map((name) => limits[name])],
    );
    return rows[0] && toAccount(rows[0]);
  }

  async insertAdminKey(key: Omit<AdminKeyRecord, 'createdAt' | 'revokedAt' | 'lastUsedAt'>): Promise<AdminKeyRecord> {
    const { rows } = await this.pool.query<AdminKeyRow>(
      `INSERT INTO admin_keys (id, account_id, name, key_hash, pepper_id, display_prefix, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
      [key.id, key.accountId, key.name, key.keyHash, key.pepperId, key.displayPrefix, key.expiresAt],
    );
    return toAdminKey(rows[0]!);
  }

  /** The admin key with one of the hashes, and whether its account is suspended. */
  async findAdminKeyByHashes(
    hashes: Buffer[],
  ): Promise<{ key: AdminKeyRecord; accountSuspended: boolean } | undefined> {
    const { rows } = await this.pool.query<AdminKeyRow & { account_suspended: boolean }>(
      `SELECT k.*, a.suspended_at IS NOT NULL AS account_suspended
       FROM admin_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = ANY($1::bytea[])`,
      [hashes],
    );
    const row = rows[0];
    return row && { key: toAdminKey(row), accountSuspended: row.account_suspended };
  }

  async touchAdminKeys(ids: string[]): Promise<void> {
    await this.pool.query('UPDATE admin_keys SET last_used_at = now() WHERE id = ANY($1::text[])', [ids]);
  }

  async findKey(id: string): Promise<KeyRecord | undefined> {
    if (!issuableId.test(id)) return undefined;
    const { rows } = await this.pool.query<KeyRow>(`SELECT ${keyColumns} FROM api_keys WHERE id = $1`, [id]);
    return rows[0] && toKey(rows[0]);
  }

  /** Records use of the given keys now: one statement for a whole batch. */
  async touchKeys(ids: string[]): Promise<void> {
    await this.pool.query('UPDATE api_keys SET last_used_at = now() WHERE id = ANY($1::text[])', [ids]);
  }

  async insertKey(key: NewKey): Promise<KeyRecord> {
    return insertKeyWith(this.pool, key);
  }

  /**
   * Runs `work` in one transaction that holds the key's row (SELECT … FOR UPDATE), with a way to insert
   * keys in the same transaction: a revocation of that key waits until the work is committed. Undefined:
   * no such key.
   */
  async withKeyLocked<T>(
    id: string,
    work: (key: KeyRecord, insert: (key: NewKey) => Promise<KeyRecord>) => Promise<T>,
  ): Promise<T | undefined> {
    if (!issuableId.test(id)) return undefined;
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<KeyRow>(`SELECT ${keyColumns} FROM api_keys WHERE id = $1 FOR UPDATE`, [id]);
      if (!rows[0]) return undefined;
      return work(toKey(rows[0]), (key) => insertKeyWith(client, key));
    });
  }

  /** The key and its account whose stored hash is one of the given hashes (one per pepper). */
  async findKeyByHashes(hashes: Buffer[]): Promise<{ key: KeyRecord; account: AccountRecord } | undefined> {
    const { rows } = await this.pool.query<KeyRow & { account: AccountRow }>(
      `SELECT k.id, k.account_id, k.name, k.environment, k.key_hash, k.pepper_id, k.display_prefix, k.residency,
         k.privacy_mode, k.allowed_models, k.allowed_ips, k.expires_at, k.created_at, k.last_used_at, k.revoked_at,
         k.replaces_key_id, row_to_json(a) AS account
       FROM api_keys k JOIN accounts a ON a.id = k.account_id
       WHERE k.key_hash = ANY($1::bytea[])`,
      [hashes],
    );
    const row = rows[0];
    if (!row) return undefined;
    const account = row.account;
    return {
      key: toKey(row),
      account: toAccount({
        ...account,
        suspended_at: account.suspended_at === null ? null : new Date(account.suspended_at),
        created_at: new Date(account.created_at),
      }),
    };
  }

  async listKeys(accountId: string): Promise<KeyRecord[]> {
    if (!issuableId.test(accountId)) return [];
    const { rows } = await this.pool.query<KeyRow>(
      `SELECT ${keyColumns} FROM api_keys WHERE account_id = $1 ORDER BY created_at, id`,
      [accountId],
    );
    return rows.map(toKey);
  }

  /** Revokes once; revoking a revoked key changes nothing. */
  async revokeKey(id: string): Promise<KeyRecord | undefined> {
    if (!issuableId.test(id)) return undefined;
    const { rows } = await this.pool.query<KeyRow>(
      `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 RETURNING ${keyColumns}`,
      [id],
    );
    return rows[0] && toKey(rows[0]);
  }
}

async function insertKeyWith(db: Pool | PoolClient, key: NewKey): Promise<KeyRecord> {
  const { rows } = await db.query<KeyRow>(
    `INSERT INTO api_keys (id, account_id, name, environment, key_hash, pepper_id, display_prefix, residency,
       privacy_mode, allowed_models, allowed_ips, expires_at, replaces_key_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING ${keyColumns}`,
    [
      key.id,
      key.accountId,
      key.name,
      key.environment,
      key.keyHash,
      key.pepperId,
      key.displayPrefix,
      key.residency,
      key.privacyMode,
      key.allowedModels,
      key.allowedIps,
      key.expiresAt,
      key.replacesKeyId,
    ],
  );
  return toKey(rows[0]!);
}
