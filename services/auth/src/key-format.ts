import { createHmac, timingSafeEqual } from 'node:crypto';
import { randomBase62 } from '@gw/ids';
import { keyEnvironments } from '@gw/vocabulary';
import type { KeyEnvironment } from '@gw/vocabulary';

export type { KeyEnvironment };
/** API keys are live or test; admin keys manage an account through the admin API. */
export type KeyKind = KeyEnvironment | 'admin';
const keyKinds: readonly KeyKind[] = [...keyEnvironments, 'admin'];
export const secretLength = 32;
const displaySecretChars = 4;

export interface Pepper {
  id: string;
  secret: string;
}

/** Issues, recognises and hashes key values of the form `<issuer>_<live|test|admin>_<32 base62>`. */
export class KeyFormat {
  private readonly pattern: RegExp;

  constructor(private readonly issuer: string) {
    this.pattern = new RegExp(`^${issuer}_(${keyKinds.join('|')})_[A-Za-z0-9]{${secretLength}}$`);
  }

  issue(kind: KeyKind): { key: string; displayPrefix: string } {
    const prefix = `${this.issuer}_${kind}_`;
    const secret = randomBase62(secretLength);
    return { key: prefix + secret, displayPrefix: prefix + secret.slice(0, displaySecretChars) };
  }

  /** The kind of a well-formed key, or undefined for anything else. */
  kindOf(presented: string): KeyKind | undefined {
    const match = this.pattern.exec(presented);
    return match ? (match[1] as KeyKind) : undefined;
  }
}

export function hashKey(key: string, pepper: Pepper): Buffer {
  return createHmac('sha256', pepper.secret).update(key).digest();
}

export function hashesEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
