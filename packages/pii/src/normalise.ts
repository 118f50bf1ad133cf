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
  /** Map back to the text below (the decoded text, or the original); null when it is the identity. */
  readonly segments: Segments | null;
  /** The decoding step under the folding (see decodeObfuscations), when it changed something. */
  readonly below?: Normalised;
}

/**
 * The offset map, as segments of the normalised text (parallel arrays, sorted by `norm`). An identity segment
 * maps its UTF-16 units one to one from `orig`; a folded segment is the output of ONE original code point
 * [orig, origEnd) (a fullwidth digit, a ligature's expansion, a digit of another script), widened over the
 * combining marks removed after it. Removed characters (zero-width, format) have no segment: the next segment
 * simply starts further on in the original. Unchanged non-ASCII text ("é") stays in identity segments, so a
 * text in French or Polish has few segments and toOriginal is a binary search.
 */
export interface Segments {
  readonly norm: number[];
  readonly orig: number[];
  /** -1 for an identity segment, else the original end of the folded code point. */
  readonly origEnd: number[];
}

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

// eslint-disable-next-line no-control-regex
const NON_ASCII = /[^\u0000-\u007f]/g;

/** The Unicode folding of the module comment, over text already decoded (see decodeObfuscations). */
function foldUnicode(text: string): Normalised {
  NON_ASCII.lastIndex = 0;
  let match = NON_ASCII.exec(text);
  if (match === null) return { text, segments: null };
  const segments: Segments = { norm: [], orig: [], origEnd: [] };
  const pieces: string[] = [];
  let length = 0;
  let position = 0;
  let changed = false;
  const last = (): number => segments.norm.length - 1;
  /** Appends `units` UTF-16 units copied one to one from the original at `from`. */
  const identity = (from: number, units: number): void => {
    if (units === 0) return;
    const k = last();
    const contiguous =
      k >= 0 && segments.origEnd[k] === -1 && segments.orig[k]! + (length - segments.norm[k]!) === from;
    if (!contiguous) {
      segments.norm.push(length);
      segments.orig.push(from);
      segments.origEnd.push(-1);
    }
    pieces.push(text.slice(from, from + units));
    length += units;
  };
  for (;;) {
    const next = match === null ? text.length : match.index;
    identity(position, next - position);
    if (match === null) break;
    const codePoint = text.codePointAt(next)!;
    const size = codePoint > 0xffff ? 2 : 1;
    const folded = foldCodePoint(codePoint);
    const original = text.slice(next, next + size);
    if (folded === original) {
      identity(next, size);
    } else {
      changed = true;
      if (folded.length === 0) {
        if (length > 0 && MARK.test(original)) widenLast(segments, length, text, next, size);
      } else {
        segments.norm.push(length);
        segments.orig.push(next);
        segments.origEnd.push(next + size);
        pieces.push(folded);
        length += folded.length;
      }
    }
    position = next + size;
    NON_ASCII.lastIndex = position;
    match = NON_ASCII.exec(text);
  }
  if (!changed) return { text, segments: null };
  return { text: pieces.join(''), segments };
}

/**
 * A combining mark removed at [at, at + size) belongs to the character just before it: widen that character's
 * span over it (splitting it off its identity segment when needed), so that a replaced value takes its accents.
 */
function widenLast(segments: Segments, length: number, text: string, at: number, size: number): void {
  const k = segments.norm.length - 1;
  if (k < 0) return;
  if (segments.origEnd[k] !== -1) {
    if (segments.origEnd[k] === at) segments.origEnd[k] = at + size;
    return;
  }
  const lastOrig = segments.orig[k]! + (length - 1 - segments.norm[k]!);
  if (lastOrig + 1 !== at) return;
  // The last character of the identity segment: one unit, or a surrogate pair.
  const pair =
    lastOrig > segments.orig[k]! &&
    /[\udc00-\udfff]/.test(text[lastOrig]!) &&
    /[\ud800-\udbff]/.test(text[lastOrig - 1]!);
  const units = pair ? 2 : 1;
  const normStart = length - units;
  const origStart = lastOrig + 1 - units;
  if (normStart === segments.norm[k]) {
    segments.origEnd[k] = at + size;
  } else {
    segments.norm.push(normStart);
    segments.orig.push(origStart);
    segments.origEnd.push(at + size);
  }
}

/** Index of the segment holding normalised offset `offset` (the last segment starting at or before it). */
function segmentAt(segments: Segments, offset: number): number {
  let low = 0;
  let high = segments.norm.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (segments.norm[middle]! <= offset) low = middle;
    else high = middle - 1;
  }
  return low;
}

/** True when the normalised text is the original (nothing decoded or folded): offsets need no mapping. */
export const isIdentity = (normalised: Normalised): boolean =>
  normalised.segments === null && normalised.below === undefined;

/** Maps a non-empty span of the normalised text back to the original text (whole code points). */
export function toOriginal(normalised: Normalised, start: number, end: number): { start: number; end: number } {
  const mapped = mapSegments(normalised.segments, start, end);
  return normalised.below === undefined ? mapped : toOriginal(normalised.below, mapped.start, mapped.end);
}

function mapSegments(segments: Segments | null, start: number, end: number): { start: number; end: number } {
  if (segments === null) return { start, end };
  const first = segmentAt(segments, start);
  const lastSegment = segmentAt(segments, end - 1);
  return {
    start:
      segments.origEnd[first] === -1 ? segments.orig[first]! + (start - segments.norm[first]!) : segments.orig[first]!,
    end:
      segments.origEnd[lastSegment] === -1
        ? segments.orig[lastSegment]! + (end - segments.norm[lastSegment]!)
        : segments.origEnd[lastSegment]!,
  };
}

/**
 * Ways of writing `@`, `.` and other characters that a filter reading text as it stands would miss: percent
 * escapes (`%40`), HTML character references (`&#64;`, `&#x40;`, `&commat;`) and the bracketed words of
 * obfuscated e-mail addresses (`[at]`, `(dot)`, `{at}`, with the spaces around them).
 */
const OBFUSCATION =
  /%([0-9a-fA-F]{2})|&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});|[[({<][ \t]{0,3}(at|dot)[ \t]{0,3}[\])}>]/gi;
const MAY_HOLD_OBFUSCATION = /[%&[({<]/;

const NAMED_REFERENCES: ReadonlyMap<string, string> = new Map([
  ['commat', '@'],
  ['period', '.'],
  ['amp', '&'],
  ['lt', '<'],
  ['gt', '>'],
  ['quot', '"'],
  ['apos', "'"],
  ['nbsp', ' '],
  ['plus', '+'],
  ['hyphen', '-'],
  ['dash', '-'],
  ['lowbar', '_'],
  ['colon', ':'],
  ['sol', '/'],
  ['lpar', '('],
  ['rpar', ')'],
]);

/** The character an obfuscation stands for, or undefined when the match is to be left as it is. */
function decoded(match: RegExpExecArray): string | undefined {
  if (match[1] !== undefined) {
    const code = parseInt(match[1], 16);
    return code >= 0x20 && code < 0x7f ? String.fromCharCode(code) : undefined;
  }
  if (match[2] !== undefined) {
    const reference = match[2];
    if (reference[0] !== '#') return NAMED_REFERENCES.get(reference.toLowerCase());
    const code =
      reference[1] === 'x' || reference[1] === 'X' ? parseInt(reference.slice(2), 16) : Number(reference.slice(1));
    return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : undefined;
  }
  return match[3]!.toLowerCase() === 'at' ? '@' : '.';
}

const isBlank = (unit: number): boolean => unit === 32 || unit === 9;

/** Decodes the obfuscations of OBFUSCATION, each one a folded segment over the original characters it stood for. */
export function decodeObfuscations(text: string): Normalised {
  if (!MAY_HOLD_OBFUSCATION.test(text)) return { text, segments: null };
  const segments: Segments = { norm: [], orig: [], origEnd: [] };
  let output = '';
  let position = 0;
  OBFUSCATION.lastIndex = 0;
  for (let match = OBFUSCATION.exec(text); match !== null; match = OBFUSCATION.exec(text)) {
    const character = decoded(match);
    if (character === undefined) continue;
    let start = match.index;
    let end = start + match[0].length;
    // "john [at] example [dot] com": the spaces around a bracketed word belong to it.
    if (match[3] !== undefined) {
      while (start > position && start > match.index - 3 && isBlank(text.charCodeAt(start - 1))) start -= 1;
      while (end < text.length && end < match.index + match[0].length + 3 && isBlank(text.charCodeAt(end))) end += 1;
      OBFUSCATION.lastIndex = end;
    }
    if (start > position) {
      segments.norm.push(output.length);
      segments.orig.push(position);
      segments.origEnd.push(-1);
      output += text.slice(position, start);
    }
    segments.norm.push(output.length);
    segments.orig.push(start);
    segments.origEnd.push(end);
    output += character;
    position = end;
  }
  if (position === 0) return { text, segments: null };
  if (position < text.length) {
    segments.norm.push(output.length);
    segments.orig.push(position);
    segments.origEnd.push(-1);
    output += text.slice(position);
  }
  return { text: output, segments };
}

/**
 * The text detectors scan: obfuscations decoded (decodeObfuscations), then Unicode folded (module comment), with
 * one map back to the original through both.
 */
export function normalise(text: string): Normalised {
  const decodedText = decodeObfuscations(text);
  const folded = foldUnicode(decodedText.text);
  if (decodedText.segments === null) return folded;
  return { text: folded.text, segments: folded.segments, below: decodedText };
}
