/**
 * Normalisation before detection, with a map back to the original offsets.
 *
 * Each code point of the original is folded on its own (so every normalised character comes from exactly one
 * original code point, and spans map back to whole code points):
 * - format characters (`\p{Cf}`: zero-width space/joiners, BOM, soft hyphen, bidi controls, tags), combining
 *   and enclosing marks (`\p{Mn}`, `\p{Me}`, including variation selectors) and a few invisible fillers are
 *   removed;
 * - NFKC folds fullwidth and other compatibility forms (`＠` → `@`, `４` → `4`, `Ａ` → `A`, `①` → `1`);
 * - every other decimal digit (`\p{Nd}`: Arabic-Indic, Devanagari, …) becomes the ASCII digit of its value;
 * - Unicode spaces (NBSP, thin space, ideographic space, line separators) become `' '`, dashes (`\p{Pd}`, minus
 *   sign) become `'-'`;
 * - Cyrillic and Greek letters that look like Latin ones (`а` → `a`, `О` → `O`) become the Latin letter.
 * Case is kept. Pure ASCII input is returned as is (identity map), which is the common and fast case.
 */

export interface Normalised {
  /** The normalised text that detectors scan. */
  readonly text: string;
  /** Original offset of the code point each normalised UTF-16 unit comes from; null when the map is identity. */
  readonly starts: Int32Array | null;
  /** Original offset just past that code point (and past combining marks folded away after it). */
  readonly ends: Int32Array | null;
}

// eslint-disable-next-line no-control-regex
const ASCII_ONLY = /^[\u0000-\u007f]*$/;
const STRIPPED = /^[\p{Cf}\p{Mn}\p{Me}\u115f\u1160\u3164\uffa0\u2800]$/u;
const MARK = /^[\p{Mn}\p{Me}]$/u;
const SPACE = /^\s$/u;
const DASH = /^[\p{Pd}\u2212\u2043\ufe63\uff0d]$/u;
const DIGIT = /^\p{Nd}$/u;

const CONFUSABLES: ReadonlyMap<number, string> = new Map(
  [
    // Cyrillic
    ['А', 'A'],
    ['В', 'B'],
    ['Е', 'E'],
    ['К', 'K'],
    ['М', 'M'],
    ['Н', 'H'],
    ['О', 'O'],
    ['Р', 'P'],
    ['С', 'C'],
    ['Т', 'T'],
    ['Х', 'X'],
    ['У', 'Y'],
    ['І', 'I'],
    ['Ј', 'J'],
    ['Ѕ', 'S'],
    ['Ԛ', 'Q'],
    ['Ԝ', 'W'],
    ['а', 'a'],
    ['в', 'b'],
    ['е', 'e'],
    ['о', 'o'],
    ['р', 'p'],
    ['с', 'c'],
    ['у', 'y'],
    ['х', 'x'],
    ['і', 'i'],
    ['ј', 'j'],
    ['ѕ', 's'],
    ['ԁ', 'd'],
    ['ԛ', 'q'],
    ['ԝ', 'w'],
    ['һ', 'h'],
    ['ӏ', 'l'],
    ['ɡ', 'g'],
    ['ı', 'i'],
    // Greek
    ['Α', 'A'],
    ['Β', 'B'],
    ['Ε', 'E'],
    ['Ζ', 'Z'],
    ['Η', 'H'],
    ['Ι', 'I'],
    ['Κ', 'K'],
    ['Μ', 'M'],
    ['Ν', 'N'],
    ['Ο', 'O'],
    ['Ρ', 'P'],
    ['Τ', 'T'],
    ['Υ', 'Y'],
    ['Χ', 'X'],
    ['ο', 'o'],
    ['ν', 'v'],
  ].map(([from, to]) => [from!.codePointAt(0)!, to!]),
);

/** Value of a `\p{Nd}` code point: Unicode encodes each digit set as runs of ten from zero. */
function digitValue(codePoint: number): string {
  let offset = 0;
  while (offset < 100 && DIGIT.test(String.fromCodePoint(codePoint - offset - 1))) offset += 1;
  return String(offset % 10);
}

function foldOne(character: string): string {
  const codePoint = character.codePointAt(0)!;
  if (codePoint < 0x80) return character;
  if (STRIPPED.test(character)) return '';
  if (SPACE.test(character)) return ' ';
  if (DASH.test(character)) return '-';
  if (DIGIT.test(character)) return digitValue(codePoint);
  return CONFUSABLES.get(codePoint) ?? character;
}

const foldCache = new Map<number, string>();
const FOLD_CACHE_LIMIT = 65_536;

/** The normalised form of one non-ASCII code point ('' when it is removed). */
export function foldCodePoint(codePoint: number): string {
  const cached = foldCache.get(codePoint);
  if (cached !== undefined) return cached;
  const character = String.fromCodePoint(codePoint);
  let folded = '';
  if (STRIPPED.test(character)) folded = '';
  else for (const part of character.normalize('NFKC')) folded += foldOne(part);
  if (foldCache.size < FOLD_CACHE_LIMIT) foldCache.set(codePoint, folded);
  return folded;
}

export function normalise(text: string): Normalised {
  if (ASCII_ONLY.test(text)) return { text, starts: null, ends: null };
  let capacity = text.length + 64;
  let starts = new Int32Array(capacity);
  let ends = new Int32Array(capacity);
  const pieces: string[] = [];
  let length = 0;
  let asciiFrom = 0;
  const flushAscii = (to: number): void => {
    if (to > asciiFrom) pieces.push(text.slice(asciiFrom, to));
  };
  const grow = (needed: number): void => {
    if (needed <= capacity) return;
    while (capacity < needed) capacity *= 2;
    const nextStarts = new Int32Array(capacity);
    nextStarts.set(starts.subarray(0, length));
    starts = nextStarts;
    const nextEnds = new Int32Array(capacity);
    nextEnds.set(ends.subarray(0, length));
    ends = nextEnds;
  };
  let index = 0;
  while (index < text.length) {
    const unit = text.charCodeAt(index);
    if (unit < 0x80) {
      grow(length + 1);
      starts[length] = index;
      ends[length] = index + 1;
      length += 1;
      index += 1;
      continue;
    }
    flushAscii(index);
    const codePoint = text.codePointAt(index)!;
    const size = codePoint > 0xffff ? 2 : 1;
    const folded = foldCodePoint(codePoint);
    if (folded.length === 0) {
      // A combining mark belongs to the character before it: widen that character's span over it.
      if (length > 0 && ends[length - 1] === index && MARK.test(String.fromCodePoint(codePoint))) {
        ends[length - 1] = index + size;
      }
    } else {
      pieces.push(folded);
      grow(length + folded.length);
      for (let k = 0; k < folded.length; k += 1) {
        starts[length] = index;
        ends[length] = index + size;
        length += 1;
      }
    }
    index += size;
    asciiFrom = index;
  }
  flushAscii(text.length);
  return { text: pieces.join(''), starts: starts.subarray(0, length), ends: ends.subarray(0, length) };
}

/** Maps a non-empty span of the normalised text back to the original text. */
export function toOriginal(normalised: Normalised, start: number, end: number): { start: number; end: number } {
  if (normalised.starts === null || normalised.ends === null) return { start, end };
  return { start: normalised.starts[start]!, end: normalised.ends[end - 1]! };
}
