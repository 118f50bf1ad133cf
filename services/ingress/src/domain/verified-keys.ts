import { hash } from 'node:crypto';
import type { Result } from '@gw/errors';
import type { VerifiedKey } from './key';
import type { RequestScope } from './request-scope';

/** Verifies a presented key (from a cache kept exact by the revocation channel, else from auth). */
export interface KeyVerifier {
  verify(presentedKey: string, sourceAddress: string, scope: RequestScope): Promise<Result<VerifiedKey>>;
}

/** Asks the auth service; the cache's source of truth. */
export type VerifyWithAuth = (
  presentedKey: string,
  sourceAddress: string,
  scope: RequestScope,
) => Promise<Result<VerifiedKey>>;

export interface VerifiedKeysOptions {
  /** How long a verified key is believed without asking auth again (auth's last-used time is this coarse). */
  ttlMs: number;
  /** Most entries kept; the oldest go first. */
  maxEntries: number;
  now?: () => number;
}

interface Entry {
  key: VerifiedKey;
  storedAt: number;
}

/**
 * Keys this ingress has verified recently, so that most requests make no call to auth. Exact, not
 * eventually right: a revocation or an account change drops the entries at once (the revocation
 * channel), nothing is cached while that channel is down (a missed notice could go unnoticed), an
 * answer from auth that raced a notice is not cached, and an entry never outlives the key's
 * `expires_at`. Entries are found by a digest of the key and the source address (the allow-list is
 * auth's to check), so the key itself is never held here.
 */
export class VerifiedKeys {
  private readonly entries = new Map<string, Entry>();
  private enabled = false;
  /** Bumped by every notice: an answer requested before a notice is not cached after it. */
  private generation = 0;
  private readonly now: () => number;

  constructor(
    private readonly verifyWithAuth: VerifyWithAuth,
    private readonly options: VerifiedKeysOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  async verify(presentedKey: string, sourceAddress: string, scope: RequestScope): Promise<Result<VerifiedKey>> {
    const id = entryId(presentedKey, sourceAddress);
    const cached = this.entries.get(id);
    if (cached) {
      const now = this.now();
      const expiresAt = cached.key.expiresAtUnixMs ?? Infinity;
      if (now - cached.storedAt < this.options.ttlMs && now < expiresAt) return { ok: true, value: cached.key };
      this.entries.delete(id);
    }
    const generation = this.generation;
    const verified = await this.verifyWithAuth(presentedKey, sourceAddress, scope);
    if (verified.ok && this.enabled && generation === this.generation) this.store(id, verified.value);
    return verified;
  }

  /** A revocation notice for a key: forget it at once. */
  dropKey(keyId: string): void {
    this.generation += 1;
    for (const [id, entry] of this.entries) if (entry.key.keyId === keyId) this.entries.delete(id);
  }

  /** An account was suspended, resumed or had its limits changed: forget its keys. */
  dropAccount(accountId: string): void {
    this.generation += 1;
    for (const [id, entry] of this.entries) if (entry.key.accountId === accountId) this.entries.delete(id);
  }

  /** Caching works only while notices can reach this ingress; a change either way forgets everything. */
  setEnabled(enabled: boolean): void {
    this.generation += 1;
    this.enabled = enabled;
    this.entries.clear();
  }

  size(): number {
    return this.entries.size;
  }

  private store(id: string, key: VerifiedKey): void {
    if (this.entries.size >= this.options.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(id, { key, storedAt: this.now() });
  }
}

/** One-shot `hash`, a quarter of `createHash`'s cost: it is on every request. */
function entryId(presentedKey: string, sourceAddress: string): string {
  return hash('sha256', `${presentedKey}\0${sourceAddress}`, 'base64');
}
