import { createHash } from 'node:crypto';

/**
 * The audit log's hash chain, without storage: entry n's hash is SHA-256 over entry n−1's hash, n and
 * the entry's canonical JSON, so that changing, removing or reordering any entry breaks every later
 * link, and the last hash, published outside the database, stands for the whole log.
 */

export const genesisHash = Buffer.alloc(32);

/** JSON with object keys sorted at every level: the same value always gives the same text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const fields = Object.keys(record)
      .filter((key) => record[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
    return `{${fields.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function chainHash(previous: Buffer, seq: number, entryJson: string): Buffer {
  return createHash('sha256').update(previous).update(`${seq}\n${entryJson}`).digest();
}

export interface StoredEntry {
  seq: number;
  /** The columns kept beside the entry for filtering; they must agree with it. */
  at: Date;
  accountId: string | null;
  entryJson: string;
  prevHash: Buffer;
  hash: Buffer;
}

export interface ChainHead {
  seq: number;
  hash: Buffer;
}

export interface ChainFailure {
  seq: number;
  reason: string;
}

/**
 * Checks entries in order, carrying the last good head between batches. Returns the first entry that
 * does not hold: a gap, a broken link, an entry that does not match its hash, or filter columns that
 * disagree with the entry.
 */
export function checkEntries(entries: readonly StoredEntry[], start: ChainHead): ChainHead | ChainFailure {
  let head = start;
  for (const entry of entries) {
    if (entry.seq !== head.seq + 1) {
      return { seq: head.seq + 1, reason: `entry ${head.seq + 1} is missing (the next stored is ${entry.seq})` };
    }
    if (!entry.prevHash.equals(head.hash)) {
      return { seq: entry.seq, reason: `its link to entry ${head.seq} is broken (that entry was changed or removed)` };
    }
    if (!chainHash(entry.prevHash, entry.seq, entry.entryJson).equals(entry.hash)) {
      return { seq: entry.seq, reason: 'its content does not match its hash (the entry was changed)' };
    }
    const parsed = JSON.parse(entry.entryJson) as { at?: unknown; account_id?: unknown };
    if (parsed.at !== entry.at.toISOString() || (parsed.account_id ?? null) !== entry.accountId) {
      return { seq: entry.seq, reason: 'its time or account columns differ from the hashed entry' };
    }
    head = { seq: entry.seq, hash: entry.hash };
  }
  return head;
}

/** The stored chain's end against the head published outside the database. */
export function checkAgainstPublished(
  stored: ChainHead,
  published: ChainHead,
  hashAt: (seq: number) => Buffer | undefined,
): ChainFailure | undefined {
  if (stored.seq < published.seq) {
    return {
      seq: stored.seq + 1,
      reason: `the log ends at entry ${stored.seq} but entry ${published.seq} was published (entries were removed)`,
    };
  }
  const hash = hashAt(published.seq);
  if (!hash?.equals(published.hash)) {
    return {
      seq: published.seq,
      reason: 'its hash differs from the one published when it was written (the log up to it was rewritten)',
    };
  }
  return undefined;
}

export const isFailure = (result: ChainHead | ChainFailure): result is ChainFailure => 'reason' in result;
