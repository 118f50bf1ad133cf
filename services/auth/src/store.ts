import type { Pool } from '@gw/db';
import type { KeyEnvironment } from './key-format';

export interface AccountRecord {
  id: string;
  name: string;
  plan: string;
  suspendedAt: Date | null;
  createdAt: Date;
}

export interface KeyRecord {
  id: string;
  accountId: string;
  name: string;
  environment: KeyEnvironment;
  keyHash: Buffer;
  pepperId: string;
  displayPrefix: string;
  residency: 'uk' | 'eu';
  privacyMode: 'off' | 'flag' | 'redact' | 'tokenise';
  allowedModels: string[] | null;
  allowedIps: string[] | null;
  expiresAt: Date | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export type NewKey = Omit<KeyRecord, 'createdAt' | 'lastUsedAt' | 'revokedAt'>;

const keyColumns = `id, account_id, name, environment, key_hash, pepper_id, display_prefix, residency, privacy_mode,
  allowed_models, allowed_ips, expires_at, created_at, last_used_at, revoked_at`;

interface KeyRow {
  id: string;
  account_id: string;
  name: string;
  environment: KeyEnvironment;
  key_hash: Buffer;
  pepper_id: string;
  display_prefix: string;
  residency: 'uk' | 'eu';
  privacy_mode: KeyRecord['privacyMode'];
  allowed_models: string[] | null;
  allowed_ips: string[] | null;
  expires_at: Date | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

function toKey(row: KeyRow): KeyRecord {
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
  };
}

interface AccountRow {
  id: string;
  name: string;
  plan: string;
  suspended_at: Date | null;
  created_at: Date;
}

function toAccount(row: AccountRow): AccountRecord {
  return { id: row.id, name: row.name, plan: row.plan, suspendedAt: row.suspended_at, createdAt: row.created_at };
}

/** Accounts and keys in PostgreSQL. Only hashes of keys are ever written. */
export class AuthStore {
  constructor(private readonly pool: Pool) {}

  async insertAccount(account: Pick<AccountRecord, 'id' | 'name' | 'plan'>): Promise<AccountRecord> {
    const { rows } = await this.pool.query<AccountRow>(
      'INSERT INTO accounts (id, name, plan) VALUES ($1, $2, $3) RETURNING id, name, plan, suspended_at, created_at',
      [account.id, account.name, account.plan],
    );
    return toAccount(rows[0]!);
  }

  async findAccount(id: string): Promise<AccountRecord | undefined> {
    const { rows } = await this.pool.query<AccountRow>(
      'SELECT id, name, plan, suspended_at, created_at FROM accounts WHERE id = $1',
      [id],
    );
    return rows[0] && toAccount(rows[0]);
  }

  async insertKey(key: NewKey): Promise<KeyRecord> {
    const { rows } = await this.pool.query<KeyRow>(
      `INSERT INTO api_keys (id, account_id, name, environment, key_hash, pepper_id, display_prefix, residency,
         privacy_mode, allowed_models, allowed_ips, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING ${keyColumns}`,
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
      ],
    );
    return toKey(rows[0]!);
  }

  /** The key and its account whose stored hash is one of the given hashes (one per pepper). */
  async findKeyByHashes(hashes: Buffer[]): Promise<{ key: KeyRecord; account: AccountRecord } | undefined> {
    const { rows } = await this.pool.query<
      KeyRow & { a_name: string; a_plan: string; a_suspended_at: Date | null; a_created_at: Date }
    >(
      `SELECT k.id, k.account_id, k.name, k.environment, k.key_hash, k.pepper_id, k.display_prefix, k.residency,
         k.privacy_mode, k.allowed_models, k.allowed_ips, k.expires_at, k.created_at, k.last_used_at, k.revoked_at,
         a.name AS a_name, a.plan AS a_plan, a.suspended_at AS a_suspended_at, a.created_at AS a_created_at
       FROM api_keys k JOIN accounts a ON a.id = k.account_id
       WHERE k.key_hash = ANY($1::bytea[])`,
      [hashes],
    );
    const row = rows[0];
    if (!row) return undefined;
    return {
      key: toKey(row),
      account: {
        id: row.account_id,
        name: row.a_name,
        plan: row.a_plan,
        suspendedAt: row.a_suspended_at,
        createdAt: row.a_created_at,
      },
    };
  }

  async listKeys(accountId: string): Promise<KeyRecord[]> {
    const { rows } = await this.pool.query<KeyRow>(
      `SELECT ${keyColumns} FROM api_keys WHERE account_id = $1 ORDER BY created_at, id`,
      [accountId],
    );
    return rows.map(toKey);
  }

  /** Revokes once; revoking a revoked key changes nothing. */
  async revokeKey(id: string): Promise<KeyRecord | undefined> {
    const { rows } = await this.pool.query<KeyRow>(
      `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 RETURNING ${keyColumns}`,
      [id],
    );
    return rows[0] && toKey(rows[0]);
  }
}
