import type { Pool } from '@gw/db';
import { chainHash, genesisHash } from './audit-chain';
import type { ChainHead, StoredEntry } from './audit-chain';

interface EntryRow {
  seq: string;
  at: Date;
  account_id: string | null;
  entry: string;
  prev_hash: Buffer;
  hash: Buffer;
}

const toEntry = (row: EntryRow): StoredEntry => ({
  seq: Number(row.seq),
  at: row.at,
  accountId: row.account_id,
  entryJson: row.entry,
  prevHash: row.prev_hash,
  hash: row.hash,
});

/** Any fixed number: appends from every auth replica take this one transaction lock in turn. */
const appendLockId = 7_213_004_511;

export interface ListFilter {
  accountId: string | undefined;
  beforeSeq: number;
  actionPrefix: string;
  limit: number;
}

/** The audit table: appended to under one lock, so that each entry links to the one before it. */
export class AuditStore {
  constructor(private readonly pool: Pool) {}

  /** Appends an entry as the next sequence number, linked to the last, in one transaction. */
  async append(at: Date, accountId: string | null, entryJson: string): Promise<StoredEntry> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [appendLockId]);
      const { rows } = await client.query<{ seq: string; hash: Buffer }>(
        'SELECT seq, hash FROM admin_audit_log ORDER BY seq DESC LIMIT 1',
      );
      const seq = rows[0] ? Number(rows[0].seq) + 1 : 1;
      const prevHash = rows[0]?.hash ?? genesisHash;
      const hash = chainHash(prevHash, seq, entryJson);
      await client.query(
        'INSERT INTO admin_audit_log (seq, at, account_id, entry, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6)',
        [seq, at, accountId, entryJson, prevHash, hash],
      );
      await client.query('COMMIT');
      return { seq, at, accountId, entryJson, prevHash, hash };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async head(): Promise<ChainHead | undefined> {
    const { rows } = await this.pool.query<{ seq: string; hash: Buffer }>(
      'SELECT seq, hash FROM admin_audit_log ORDER BY seq DESC LIMIT 1',
    );
    return rows[0] && { seq: Number(rows[0].seq), hash: rows[0].hash };
  }

  /** Newest first, before `beforeSeq` (0: from the newest). */
  async list(filter: ListFilter): Promise<StoredEntry[]> {
    const parameters: unknown[] = [filter.limit];
    const conditions = ['TRUE'];
    if (filter.beforeSeq > 0) {
      parameters.push(filter.beforeSeq);
      conditions.push(`seq < $${parameters.length}`);
    }
    if (filter.accountId !== undefined) {
      parameters.push(filter.accountId);
      conditions.push(`account_id = $${parameters.length}`);
    }
    if (filter.actionPrefix !== '') {
      // The action is the entry's; its JSON is parsed only for the rows that pass the other conditions.
      parameters.push(`${filter.actionPrefix.replace(/[\\%_]/g, (character) => `\\${character}`)}%`);
      conditions.push(`(entry::jsonb ->> 'action') LIKE $${parameters.length}`);
    }
    const { rows } = await this.pool.query<EntryRow>(
      `SELECT * FROM admin_audit_log WHERE ${conditions.join(' AND ')} ORDER BY seq DESC LIMIT $1`,
      parameters,
    );
    return rows.map(toEntry);
  }

  /** Oldest first, from `afterSeq`, in batches for verification. */
  async batchAfter(afterSeq: number, limit: number): Promise<StoredEntry[]> {
    const { rows } = await this.pool.query<EntryRow>(
      'SELECT * FROM admin_audit_log WHERE seq > $1 ORDER BY seq LIMIT $2',
      [afterSeq, limit],
    );
    return rows.map(toEntry);
  }

  /** Names this database, so that a head published for it is never read for another (a recreated one). */
  async chainName(): Promise<string> {
    const { rows } = await this.pool.query<{ name: string }>(
      "SELECT current_database() || ':' || oid AS name FROM pg_database WHERE datname = current_database()",
    );
    return rows[0]!.name;
  }
}
