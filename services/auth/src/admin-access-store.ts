import type { Pool } from '@gw/db';
import type { KeyEnvironment } from './key-format';
import { accountColumns, issuableId, keyColumns, toAccount, toAdminKey, toKey } from './store';
import type { AccountRecord, AccountRow, AdminKeyRecord, KeyRecord } from './store';

/** At most `limit` items after the one whose id is `after`; newest first. */
export interface Page {
  limit: number;
  after: string;
}

export interface PageOf<T> {
  items: T[];
  /** The `after` of the next page; empty on the last. */
  nextAfter: string;
}

export interface KeyFilters {
  query: string;
  status: '' | 'active' | 'revoked' | 'expired';
  environment: KeyEnvironment | undefined;
}

export interface AccountFilters {
  onlyId: string | undefined;
  query: string;
  status: '' | 'active' | 'suspended';
}

/** The fields of a key an admin may edit; absent: unchanged. */
export interface KeyChanges {
  name?: string;
  allowedModels?: string[] | null;
  allowedIps?: string[] | null;
  expiresAt?: Date | null;
}

const keyChangeColumns: Record<keyof KeyChanges, string> = {
  name: 'name',
  allowedModels: 'allowed_models',
  allowedIps: 'allowed_ips',
  expiresAt: 'expires_at',
};

/** `%`, `_` and `\` match themselves in a search. */
const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;

/** One page from rows fetched with one more than the limit. */
function pageOf<R extends { id: string }, T>(rows: R[], limit: number, convert: (row: R) => T): PageOf<T> {
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  return { items: kept.map(convert), nextAfter: more ? kept[kept.length - 1]!.id : '' };
}

/**
 * The conditions of a page after a cursor, newest first: `(created_at, id)` below the cursor's. A cursor
 * the gateway could not have issued matches nothing.
 */
function afterCursor(table: string, page: Page, parameters: unknown[]): string {
  if (page.after === '') return 'TRUE';
  parameters.push(issuableId.test(page.after) ? page.after : '');
  return `(created_at, id) < (SELECT created_at, id FROM ${table} WHERE id = $${parameters.length})`;
}

/** Lists with filters and pages, admin keys' lifecycle, key edits and the counts bounds are checked against. */
export class AdminAccessStore {
  constructor(private readonly pool: Pool) {}

  async searchKeys(accountId: string, filters: KeyFilters, page: Page): Promise<PageOf<KeyRecord>> {
    if (!issuableId.test(accountId)) return { items: [], nextAfter: '' };
    const parameters: unknown[] = [accountId];
    const conditions = ['account_id = $1', afterCursor('api_keys', page, parameters)];
    if (filters.query !== '') {
      parameters.push(likePattern(filters.query));
      const at = `$${parameters.length}`;
      conditions.push(`(name ILIKE ${at} OR id ILIKE ${at} OR display_prefix ILIKE ${at})`);
    }
    if (filters.environment) {
      parameters.push(filters.environment);
      conditions.push(`environment = $${parameters.length}`);
    }
    const statusCondition = {
      '': 'TRUE',
      active: 'revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())',
      revoked: 'revoked_at IS NOT NULL',
      expired: 'revoked_at IS NULL AND expires_at <= now()',
    }[filters.status];
    conditions.push(statusCondition);
    parameters.push(page.limit + 1);
    const { rows } = await this.pool.query<Parameters<typeof toKey>[0]>(
      `SELECT ${keyColumns} FROM api_keys WHERE ${conditions.join(' AND ')}
       ORDER BY created_at DESC, id DESC LIMIT $${parameters.length}`,
      parameters,
    );
    return pageOf(rows, page.limit, toKey);
  }

  async searchAccounts(filters: AccountFilters, page: Page): Promise<PageOf<AccountRecord>> {
    const parameters: unknown[] = [];
    const conditions = [afterCursor('accounts', page, parameters)];
    if (filters.onlyId !== undefined) {
      parameters.push(issuableId.test(filters.onlyId) ? filters.onlyId : '');
      conditions.push(`id = $${parameters.length}`);
    }
    if (filters.query !== '') {
      parameters.push(likePattern(filters.query));
      conditions.push(`(name ILIKE $${parameters.length} OR id ILIKE $${parameters.length})`);
    }
    if (filters.status === 'active') conditions.push('suspended_at IS NULL');
    if (filters.status === 'suspended') conditions.push('suspended_at IS NOT NULL');
    parameters.push(page.limit + 1);
    const { rows } = await this.pool.query<AccountRow>(
      `SELECT ${accountColumns} FROM accounts WHERE ${conditions.join(' AND ')}
       ORDER BY created_at DESC, id DESC LIMIT $${parameters.length}`,
      parameters,
    );
    return pageOf(rows, page.limit, toAccount);
  }

  async listAdminKeys(accountId: string, page: Page): Promise<PageOf<AdminKeyRecord>> {
    if (!issuableId.test(accountId)) return { items: [], nextAfter: '' };
    const parameters: unknown[] = [accountId];
    const cursor = afterCursor('admin_keys', page, parameters);
    parameters.push(page.limit + 1);
    const { rows } = await this.pool.query<Parameters<typeof toAdminKey>[0]>(
      `SELECT * FROM admin_keys WHERE account_id = $1 AND ${cursor}
       ORDER BY created_at DESC, id DESC LIMIT $${parameters.length}`,
      parameters,
    );
    return pageOf(rows, page.limit, toAdminKey);
  }

  /** Revokes once; a key of another account than `accountId` (when given) is not found. */
  async revokeAdminKey(id: string, accountId: string | undefined): Promise<AdminKeyRecord | undefined> {
    if (!issuableId.test(id)) return undefined;
    const { rows } = await this.pool.query<Parameters<typeof toAdminKey>[0]>(
      `UPDATE admin_keys SET revoked_at = COALESCE(revoked_at, now())
       WHERE id = $1 AND ($2::text IS NULL OR account_id = $2) RETURNING *`,
      [id, accountId ?? null],
    );
    return rows[0] && toAdminKey(rows[0]);
  }

  async updateKey(id: string, changes: KeyChanges): Promise<KeyRecord | undefined> {
    if (!issuableId.test(id)) return undefined;
    const names = Object.keys(changes) as (keyof KeyChanges)[];
    const assignments = names.map((name, index) => `${keyChangeColumns[name]} = $${index + 2}`);
    const { rows } = await this.pool.query<Parameters<typeof toKey>[0]>(
      `UPDATE api_keys SET ${assignments.join(', ')} WHERE id = $1 RETURNING ${keyColumns}`,
      [id, ...names.map((name) => changes[name])],
    );
    return rows[0] && toKey(rows[0]);
  }

  /** Keys that still work or may be made to: neither revoked nor expired. */
  async countLiveKeys(accountId: string): Promise<number> {
    const { rows } = await this.pool.query<{ count: string }>(
      `SELECT count(*) FROM api_keys
       WHERE account_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
      [accountId],
    );
    return Number(rows[0]!.count);
  }

  async countLiveAdminKeys(accountId: string): Promise<number> {
    const { rows } = await this.pool.query<{ count: string }>(
      `SELECT count(*) FROM admin_keys
       WHERE account_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
      [accountId],
    );
    return Number(rows[0]!.count);
  }
}
