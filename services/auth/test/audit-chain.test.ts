import { canonicalJson, chainHash, checkAgainstPublished, checkEntries, genesisHash } from '../src/audit-chain';
import type { StoredEntry } from '../src/audit-chain';

function chain(count: number): StoredEntry[] {
  const entries: StoredEntry[] = [];
  let previous: Buffer = genesisHash;
  for (let seq = 1; seq <= count; seq += 1) {
    const at = new Date(Date.UTC(2026, 10, 28, 0, 0, seq));
    const entryJson = canonicalJson({ at: at.toISOString(), account_id: 'acct_a', action: 'key.create', n: seq });
    const hash = chainHash(previous, seq, entryJson);
    entries.push({ seq, at, accountId: 'acct_a', entryJson, prevHash: previous, hash });
    previous = hash;
  }
  return entries;
}

describe('audit chain', () => {
  it('writes the same JSON for the same value, whatever the key order', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { f: 1, e: 2 }], c: null } })).toBe(
      canonicalJson({ a: { c: null, d: [1, { e: 2, f: 1 }] }, b: 1 }),
    );
  });

  it('accepts an intact chain and returns its head', () => {
    const entries = chain(5);
    expect(checkEntries(entries, { seq: 0, hash: genesisHash })).toEqual({ seq: 5, hash: entries[4]!.hash });
  });

  it('names the first entry that does not hold', () => {
    const entries = chain(5);
    const altered = entries.map((entry) =>
      entry.seq === 3 ? { ...entry, entryJson: entry.entryJson.replace('3', '4') } : entry,
    );
    expect(checkEntries(altered, { seq: 0, hash: genesisHash })).toEqual({
      seq: 3,
      reason: expect.stringMatching(/hash/),
    });
    const gap = entries.filter((entry) => entry.seq !== 2);
    expect(checkEntries(gap, { seq: 0, hash: genesisHash })).toEqual({
      seq: 2,
      reason: expect.stringMatching(/missing/),
    });
    const moved = entries.map((entry) => (entry.seq === 4 ? { ...entry, accountId: 'acct_b' } : entry));
    expect(checkEntries(moved, { seq: 0, hash: genesisHash })).toEqual({
      seq: 4,
      reason: expect.stringMatching(/columns/),
    });
  });

  it('finds a removed end or a rewritten chain against the published head', () => {
    const entries = chain(5);
    const hashAt = (seq: number) => entries[seq - 1]?.hash;
    const published = { seq: 5, hash: entries[4]!.hash };
    expect(checkAgainstPublished({ seq: 5, hash: entries[4]!.hash }, published, hashAt)).toBeUndefined();
    expect(checkAgainstPublished({ seq: 4, hash: entries[3]!.hash }, published, hashAt)).toEqual({
      seq: 5,
      reason: expect.stringMatching(/removed/),
    });
    expect(checkAgainstPublished({ seq: 5, hash: genesisHash }, published, () => genesisHash)).toEqual({
      seq: 5,
      reason: expect.stringMatching(/rewritten/),
    });
  });
});
