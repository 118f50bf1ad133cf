import type { VerifiedKey } from './keys';

/**
 * Recently verified active keys, by hash, so that most requests need no database read. Entries live
 * a few seconds at most; a revocation or suspension drops them at once (through the revocation bus),
 * and while the bus is disconnected nothing is cached, since a missed message could go unnoticed.
 */
export class VerifiedKeyCache {
  private readonly entries = new Map<string, { value: VerifiedKey; storedAt: number }>();
  private enabled = false;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get(hash: string): VerifiedKey | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (this.now() - entry.storedAt >= this.ttlMs) {
      this.entries.delete(hash);
      return undefined;
    }
    return entry.value;
  }

  set(hash: string, value: VerifiedKey): void {
    if (this.enabled) this.entries.set(hash, { value, storedAt: this.now() });
  }

  dropKey(keyId: string): void {
    for (const [hash, entry] of this.entries) if (entry.value.key.id === keyId) this.entries.delete(hash);
  }

  dropAccount(accountId: string): void {
    for (const [hash, entry] of this.entries) if (entry.value.account.id === accountId) this.entries.delete(hash);
  }

  /** Caching resumes only once invalidations can reach us again; everything older is forgotten. */
  setEnabled(enabled: boolean): void {
    this.enabled = enabled;
    this.entries.clear();
  }
}
