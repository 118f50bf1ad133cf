import { randomBytes } from 'node:crypto';
import type { EntityType } from './types';

/**
 * Tokenise placeholders: `[[PII:EMAIL:1:k7f3q9x2mh]]` — opening sentinel `[[PII:`, the entity type, the number of
 * the value within the request, the request's nonce, `]]`.
 *
 * Plain ASCII on purpose: no character is escaped by JSON (`\uXXXX` for non-ASCII under ensure_ascii serialisers,
 * `<`/`>`/`&` under HTML-safe ones) or HTML, so the placeholder is the same bytes in `text_delta` and in
 * `input_json_delta` source; no underscore or '*' at its edges that Markdown would eat; one short, fixed
 * opening sentinel that a streaming restorer can hold back cheaply; upper-case type names a model copies as they
 * are and that tell it what kind of value stood there. The nonce (letters and digits, fresh per request) means a
 * look-alike typed by the user or invented by the model never matches: the restorer only replaces placeholders
 * with this request's nonce that are in this request's map.
 */

export const OPEN = '[[PII:';
export const CLOSE = ']]';
/** Type names: upper-case letters, digits, '_' (the EntityType names). */
export const MAX_TYPE_LENGTH = 32;
export const MAX_NUMBER_DIGITS = 7;
const NONCE = /^[A-Za-z0-9]{6,64}$/;

export function assertNonce(nonce: string): void {
  if (!NONCE.test(nonce)) throw new RangeError('pii: the nonce must be 6 to 64 ASCII letters or digits');
}

export function placeholder(type: EntityType, number: number, nonce: string): string {
  return `${OPEN}${type}:${number}:${nonce}${CLOSE}`;
}

/** The longest placeholder with this nonce (the restorer never holds back more than this minus one). */
export function maxPlaceholderLength(nonce: string): number {
  return OPEN.length + MAX_TYPE_LENGTH + 1 + MAX_NUMBER_DIGITS + 1 + nonce.length + CLOSE.length;
}

const NONCE_ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789';

/** A fresh nonce: 12 characters from a 32-letter alphabet (60 bits) from the CSPRNG. */
export function createNonce(): string {
  const bytes = randomBytes(12);
  let nonce = '';
  for (const byte of bytes) nonce += NONCE_ALPHABET[byte & 31];
  return nonce;
}

/** A regex for the complete placeholders of one nonce (global; groups: type, number). */
export function placeholderPattern(nonce: string): RegExp {
  assertNonce(nonce);
  return new RegExp(
    `\\[\\[PII:([A-Z][A-Z0-9_]{0,${MAX_TYPE_LENGTH - 1}}):([1-9][0-9]{0,${MAX_NUMBER_DIGITS - 1}}):${nonce}\\]\\]`,
    'g',
  );
}

const isUpper = (unit: number): boolean => unit >= 65 && unit <= 90;
const isDigit = (unit: number): boolean => unit >= 48 && unit <= 57;

/**
 * True when `text` (from `from` to its end) is a PROPER prefix of some placeholder of this nonce: the text a
 * streaming restorer must hold back because the next chunk could complete it. A small hand-written automaton over
 * the grammar, O(length).
 */
export function isPlaceholderPrefix(text: string, from: number, nonce: string): boolean {
  let index = from;
  const length = text.length;
  // Opening sentinel.
  for (let k = 0; k < OPEN.length; k += 1, index += 1) {
    if (index === length) return true;
    if (text[index] !== OPEN[k]) return false;
  }
  // Type.
  let typeLength = 0;
  while (
    index < length &&
    (isUpper(text.charCodeAt(index)) || (typeLength > 0 && (isDigit(text.charCodeAt(index)) || text[index] === '_')))
  ) {
    typeLength += 1;
    index += 1;
    if (typeLength > MAX_TYPE_LENGTH) return false;
  }
  if (index === length) return true;
  if (typeLength === 0 || text[index] !== ':') return false;
  index += 1;
  // Number.
  let digits = 0;
  while (index < length && isDigit(text.charCodeAt(index))) {
    if (digits === 0 && text[index] === '0') return false;
    digits += 1;
    index += 1;
    if (digits > MAX_NUMBER_DIGITS) return false;
  }
  if (index === length) return true;
  if (digits === 0 || text[index] !== ':') return false;
  index += 1;
  // Nonce, then the closing sentinel; the complete placeholder is not a proper prefix.
  const tail = nonce + CLOSE;
  for (let k = 0; k < tail.length; k += 1, index += 1) {
    if (index === length) return true;
    if (text[index] !== tail[k]) return false;
  }
  return false;
}
