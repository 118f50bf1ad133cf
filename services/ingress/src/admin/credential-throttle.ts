import { isIPv6 } from 'node:net';

/**
 * Slows guessing of admin credentials, per source address: each address may present BURST bad
 * credentials at once, then one more every REFILL_MS; past that its requests are refused (429) before
 * any credential is checked, until the wait ends. Addresses are counted apart, so one address's
 * refusals never hold up another's. An IPv6 caller is counted by its /64, the block one host holds.
 */
export interface ThrottleSettings {
  burst: number;
  refillMs: number;
  /** Most addresses remembered; past it, those with every token back go first, then the oldest. */
  maxAddresses: number;
}

export const defaultThrottleSettings: ThrottleSettings = { burst: 10, refillMs: 6_000, maxAddresses: 10_000 };

interface Bucket {
  tokens: number;
  updatedAtMs: number;
}

/** The part of an address that identifies a caller: all of IPv4, the /64 of IPv6. */
export function throttledUnit(address: string): string {
  if (!isIPv6(address) || address.startsWith('::ffff:')) return address.replace(/^::ffff:/, '');
  const [head = '', tail = ''] = address.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::')
    ? [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups]
    : headGroups;
  return `${groups
    .slice(0, 4)
    .map((group) => (Number.parseInt(group, 16) || 0).toString(16))
    .join(':')}::/64`;
}

export class CredentialThrottle {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly settings: ThrottleSettings = defaultThrottleSettings,
    private readonly now: () => number = Date.now,
  ) {}

  /** How long the address must wait before its next attempt; 0 when it may try now. */
  waitMs(address: string): number {
    const bucket = this.current(throttledUnit(address));
    if (!bucket || bucket.tokens >= 1) return 0;
    return Math.ceil((1 - bucket.tokens) * this.settings.refillMs);
  }

  /** A bad credential from the address; returns whether this one emptied its allowance. */
  refused(address: string): boolean {
    const unit = throttledUnit(address);
    const bucket = this.current(unit) ?? { tokens: this.settings.burst, updatedAtMs: this.now() };
    bucket.tokens = Math.max(0, bucket.tokens - 1);
    this.buckets.delete(unit);
    this.buckets.set(unit, bucket);
    this.trim();
    return bucket.tokens < 1;
  }

  /** The unit's bucket refilled to now, or undefined when it has never been refused. */
  private current(unit: string): Bucket | undefined {
    const bucket = this.buckets.get(unit);
    if (!bucket) return undefined;
    const now = this.now();
    bucket.tokens = Math.min(this.settings.burst, bucket.tokens + (now - bucket.updatedAtMs) / this.settings.refillMs);
    bucket.updatedAtMs = now;
    return bucket;
  }

  private trim(): void {
    if (this.buckets.size <= this.settings.maxAddresses) return;
    for (const [unit] of this.buckets) {
      if ((this.current(unit)?.tokens ?? 0) >= this.settings.burst) this.buckets.delete(unit);
    }
    for (const [unit] of this.buckets) {
      if (this.buckets.size <= this.settings.maxAddresses) break;
      this.buckets.delete(unit);
    }
  }
}
