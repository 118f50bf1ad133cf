import { randomBytes } from 'node:crypto';

const base62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** Largest multiple of 62 that fits a byte: bytes at or above it are dropped, so no character is favoured. */
const unbiasedLimit = 248;

/** `length` base62 characters from the CSPRNG with rejection sampling (no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte >= unbiasedLimit) continue;
      out += base62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export const newAccountId = () => `acct_${randomBase62(20)}`;
export const newKeyId = () => `key_${randomBase62(20)}`;
/** Identifies a request in headers, logs and usage events without revealing anything of its content. */
export const newRequestId = () => `req_${randomBase62(24)}`;
