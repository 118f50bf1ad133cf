import { randomInt } from 'node:crypto';

const base62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** An id shaped like the upstream's: a prefix and 24 random base62 characters. */
export function randomId(prefix: string): string {
  let id = prefix;
  for (let i = 0; i < 24; i += 1) id += base62[randomInt(base62.length)];
  return id;
}
