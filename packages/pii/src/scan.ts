import { sentenceCuts, sentenceEnd, sentenceStart } from './sentences';
import type { DetectorId, EntityType } from './types';

/** A match in NORMALISED offsets, before thresholds and overlap resolution. */
export interface Candidate {
  readonly detector: DetectorId;
  readonly type: EntityType;
  readonly start: number;
  readonly end: number;
  /** The score before thresholds (named as in Entity, so that a candidate can be an entity as it is). */
  readonly confidence: number;
  /** The value in a canonical form (digits only, lower-case email, E.164 phone): `[TYPE_n]` numbering key. */
  readonly canonical: string;
}

/** Context words: how far around a match they count (normalised characters), never past its sentence. */
export const CONTEXT_BEFORE = 60;
export const CONTEXT_AFTER = 30;
/** A context word raises the score by this much, and to at least CONTEXT_MIN (Presidio's 0.35 / 0.4). */
export const CONTEXT_BOOST = 0.35;
export const CONTEXT_MIN = 0.4;
/**
 * A negative context word ("order", "invoice", "version", …) lowers the score by this much. It counts only
 * shortly BEFORE the value (a label precedes its value), so that the label of the NEXT value ("…PESEL
 * 44051401359. Order 123…") does not count against this one; and not when a number of its own and then words
 * come between it and the value ("Re ticket 4471: my PESEL is …": "ticket" labels 4471).
 */
export const NEGATIVE_PENALTY = 0.35;
export const NEGATIVE_BEFORE = 32;

/** One boundary-aware, case-insensitive regex for a list of words or phrases. */
export function wordList(words: readonly string[]): RegExp {
  const escaped = [...words]
    .sort((a, b) => b.length - a.length)
    .map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ /g, '[\\s_.-]{1,3}'));
  return new RegExp(`(?<![\\p{L}\\p{N}])(?:${escaped.join('|')})(?![\\p{L}\\p{N}])`, 'iu');
}

/** Words that make a number look like a business reference rather than personal data. */
export const NEGATIVE_CONTEXT = wordList([
  'order',
  'order no',
  'order number',
  'invoice',
  'inv',
  'ref',
  'reference',
  'ticket',
  'tracking',
  'tracking number',
  'timestamp',
  'transaction',
  'txn',
  'serial',
  'serial number',
  'isbn',
  'sku',
  'part number',
  'product code',
  'po number',
  'confirmation',
  'booking',
  'version',
  'build',
  // German, French, Spanish, Italian, Dutch, Polish: order, invoice, reference, tracking, version.
  'bestellung',
  'bestellnummer',
  'rechnung',
  'rechnungsnummer',
  'referenz',
  'sendungsnummer',
  'commande',
  'facture',
  'référence',
  'numéro de suivi',
  'pedido',
  'factura',
  'referencia',
  'número de seguimiento',
  'ordine',
  'fattura',
  'riferimento',
  'bestelling',
  'bestelnummer',
  'factuur',
  'referentie',
  'zamówienie',
  'zamówienia',
  'faktura',
  'faktury',
  'numer zamówienia',
  'wersja',
]);

const WORD_CHAR = /^[\p{L}\p{N}_]$/u;

export function isWordChar(text: string, index: number): boolean {
  if (index < 0 || index >= text.length) return false;
  const unit = text.charCodeAt(index);
  if (unit < 0x80) {
    return (unit >= 48 && unit <= 57) || (unit >= 65 && unit <= 90) || (unit >= 97 && unit <= 122) || unit === 95;
  }
  const codePoint = text.codePointAt(index)!;
  if (unit >= 0xdc00 && unit <= 0xdfff && index > 0)
    return WORD_CHAR.test(String.fromCodePoint(text.codePointAt(index - 1)!));
  return WORD_CHAR.test(String.fromCodePoint(codePoint));
}

export const isDigitCode = (unit: number): boolean => unit >= 48 && unit <= 57;

/**
 * Characters tolerated between digit groups of one number (after normalisation: all dashes are '-'): spaces and
 * line breaks, `-`, `.`, `/`, brackets, and the `_`, `,` and `:` people use to slip a number past a filter.
 */
export const isSeparatorCode = (unit: number): boolean =>
  unit === 32 ||
  unit === 9 ||
  unit === 10 ||
  unit === 13 ||
  unit === 45 ||
  unit === 46 ||
  unit === 47 ||
  unit === 40 ||
  unit === 41 ||
  unit === 95 ||
  unit === 44 ||
  unit === 58;

/** At most this many separator characters between two digit groups (" - ", ") (", a run of spaces …). */
export const MAX_SEPARATOR_RUN = 8;

/**
 * A run of digits with separators between groups: "020 7946 0958", "4111-1111-1111-1111", "9 4 3 4 7 6 5 9 1 9".
 * Numeric detectors look at windows of whole consecutive groups, so a value inside a longer run is still found
 * while a window never cuts a group of contiguous digits.
 */
export interface DigitRun {
  readonly start: number;
  readonly end: number;
  /** How many groups of contiguous digits the run has (the arrays below may be longer: read only this many). */
  readonly groups: number;
  /** [start, end) of each group of contiguous digits. */
  readonly groupStarts: readonly number[];
  readonly groupEnds: readonly number[];
  /**
   * All digits of the run (empty when the visitor asked for none, see Scan.eachRun); digitOffsets[k] is where
   * group k starts in them (groups + 1 entries).
   */
  readonly digits: string;
  readonly digitOffsets: readonly number[];
  /** Offset of a '+' just before the run (or '+' and one space), else -1. */
  readonly plus: number;
}

const isLetterCode = (unit: number): boolean =>
  (unit >= 65 && unit <= 90) || (unit >= 97 && unit <= 122) || unit > 0x7f;

/** No letter, digit or '_' before: where identifiers, codes and postcodes start. */
const WORD_START = '(?<![\\p{L}\\p{N}_])';

/** The patterns of every WordStartPattern, as one finder for Scan.wordStartMatches (built at first use). */
const wordStartBodies: string[] = [];
let wordStartFinder: RegExp | null = null;

/**
 * A pattern that matches only at a word start. Several detectors have one; rather than scan the whole text once
 * for each (most of the cost is trying every position), one finder made of all of them gives the positions where
 * any may match, and each pattern is tried only there (see Scan.wordStartMatches).
 */
export class WordStartPattern {
  /** The pattern after WORD_START, sticky: tried at one position. */
  readonly sticky: RegExp;

  /** `body`: the pattern without its word-start lookbehind; its flags without 'g' ('u', or 'iu'). */
  constructor(body: RegExp) {
    this.sticky = new RegExp(WORD_START + body.source, `${body.flags}y`);
    // In the finder, groups are not captured, and case is ignored for all (a superset of the positions).
    wordStartBodies.push(body.source.replace(/(?<!\\)\((?!\?)/g, '(?:'));
    wordStartFinder = null;
  }
}

function finder(): RegExp {
  wordStartFinder ??= new RegExp(`${WORD_START}(?=${wordStartBodies.join('|')})`, 'giu');
  return wordStartFinder;
}

interface ScoreOptions {
  readonly boost?: number;
  readonly negative?: RegExp | null;
}

/** One shared object for calls without options (a default `{}` would be a new object per match). */
const DEFAULT_SCORE_OPTIONS: ScoreOptions = {};

/** Scan state shared by the detectors for one normalised text. */
export class Scan {
  /**
   * @param now the time of the request (ms since the epoch): a date after it is no date of birth.
   */
  constructor(
    readonly text: string,
    readonly now: number = Date.now(),
  ) {}

  private cutsCache: number[] | null = null;

  /** Sentence cuts, found once per text and only when some match asks for its context. */
  private cuts(): readonly number[] {
    if (this.cutsCache === null) this.cutsCache = sentenceCuts(this.text);
    return this.cutsCache;
  }

  /** The context window before `start`: `before` characters at most, never before its sentence. */
  private windowBefore(start: number, before: number): string {
    const from = Math.max(0, start - before);
    if (from === start) return '';
    return this.text.slice(Math.max(from, sentenceStart(this.cuts(), start)), start);
  }

  /** The context window after `end`: `after` characters at most, never past its sentence. */
  private windowAfter(end: number, after: number): string {
    const to = Math.min(this.text.length, end + after);
    if (to === end) return '';
    return this.text.slice(end, Math.min(to, sentenceEnd(this.cuts(), end, this.text.length)));
  }

  /** True when a word of `words` occurs within the context window around [start, end), in its sentence. */
  near(words: RegExp, start: number, end: number, before = CONTEXT_BEFORE, after = CONTEXT_AFTER): boolean {
    return words.test(this.windowBefore(start, before)) || words.test(this.windowAfter(end, after));
  }

  /**
   * True when a negative word labels the value at `start`: it is in the window before it, no number followed by
   * words stands between them (that number is the one it labels), and no label of the value's own kind (`label`,
   * the detector's context words) stands between them either ("order NHS number 943 476 5919": the NHS label is
   * the value's, whatever comes before it).
   */
  negativeBefore(words: RegExp, start: number, before = NEGATIVE_BEFORE, label: RegExp | null = null): boolean {
    let window = this.windowBefore(start, before);
    // Most windows hold no negative word at all: only those that do are looked at more closely.
    if (!words.test(window)) return false;
    let letterAfter = false;
    for (let index = window.length - 1; index >= 0; index -= 1) {
      const unit = window.charCodeAt(index);
      if (isLetterCode(unit)) letterAfter = true;
      else if (letterAfter && isDigitCode(unit)) {
        window = window.slice(index + 1);
        if (!words.test(window)) return false;
        break;
      }
    }
    return label === null || !label.test(window.slice(lastMatchEnd(words, window)));
  }

  /** base → +context (at least CONTEXT_MIN) → −negative context, clamped to [0, 1]. */
  score(
    base: number,
    start: number,
    end: number,
    positive: RegExp | null,
    options: ScoreOptions = DEFAULT_SCORE_OPTIONS,
  ): number {
    let score = base;
    if (positive !== null && this.near(positive, start, end)) {
      score = Math.max(score + (options.boost ?? CONTEXT_BOOST), CONTEXT_MIN);
    }
    const negative = options.negative === undefined ? NEGATIVE_CONTEXT : options.negative;
    if (negative !== null && this.negativeBefore(negative, start, NEGATIVE_BEFORE, positive)) score -= NEGATIVE_PENALTY;
    return Math.min(1, Math.max(0, Math.round(score * 100) / 100));
  }

  /**
   * The runs found by the first eachRun, as flat numbers: per run its start, end, plus and group count, then the
   * start and end of each group. One array instead of a few small objects per run: a text dense with numbers
   * would otherwise fill the young heap with objects that live until the end of detection (costly to collect).
   */
  private runTable: RunTable | null = null;

  /**
   * Calls `visit` with each digit run of at least MIN_RUN_DIGITS digits, in order. The run object and its arrays
   * are reused from one run to the next: they are valid only during the call. `digits` is filled only when
   * `withDigits` is true (the default); otherwise it is empty and only the offsets are set.
   */
  eachRun(visit: (run: DigitRun) => void, withDigits = true): void {
    if (this.runTable !== null) {
      replayRuns(this.text, this.runTable, visit, withDigits);
      return;
    }
    const table = new RunTable();
    forEachDigitRun(
      this.text,
      (run) => {
        table.record(run);
        visit(run);
      },
      withDigits,
    );
    this.runTable = table;
  }

  private wordStartsCache: number[] | null = null;

  /** Positions where some WordStartPattern may match (found once per text, at the first wordStartMatches). */
  private wordStarts(): readonly number[] {
    if (this.wordStartsCache === null) {
      const starts: number[] = [];
      const find = finder();
      find.lastIndex = 0;
      while (find.test(this.text)) {
        // The finder's matches are empty: note the position and step on.
        starts.push(find.lastIndex);
        find.lastIndex += 1;
      }
      this.wordStartsCache = starts;
    }
    return this.wordStartsCache;
  }

  /** The matches of `pattern` that a global scan of the text would give (see allMatches), in order. */
  *wordStartMatches(pattern: WordStartPattern): Generator<RegExpExecArray> {
    const sticky = pattern.sticky;
    // A global scan goes on after the end of each match; no pattern matches an empty string.
    let next = 0;
    for (const at of this.wordStarts()) {
      if (at < next) continue;
      sticky.lastIndex = at;
      const match = sticky.exec(this.text);
      if (match === null) continue;
      next = at + match[0].length;
      yield match;
    }
  }
}

/** Where the last match of `words` in `text` ends (0 when none). */
function lastMatchEnd(words: RegExp, text: string): number {
  const global = new RegExp(words.source, `${words.flags}g`);
  let end = 0;
  for (let match = global.exec(text); match !== null; match = global.exec(text)) {
    end = match.index + match[0].length;
    if (match[0].length === 0) global.lastIndex += 1;
  }
  return end;
}

/** A growable array of 32-bit numbers (offsets in a string always fit). */
class RunTable {
  // Small at first: most texts of a request (keys, labels, short values) have one run or none.
  numbers = new Int32Array(64);
  length = 0;

  record(run: DigitRun): void {
    const needed = this.length + 4 + 2 * run.groups;
    if (needed > this.numbers.length) {
      const grown = new Int32Array(Math.max(needed, 4 * this.numbers.length));
      grown.set(this.numbers.subarray(0, this.length));
      this.numbers = grown;
    }
    const numbers = this.numbers;
    let at = this.length;
    numbers[at] = run.start;
    numbers[at + 1] = run.end;
    numbers[at + 2] = run.plus;
    numbers[at + 3] = run.groups;
    at += 4;
    for (let group = 0; group < run.groups; group += 1, at += 2) {
      numbers[at] = run.groupStarts[group]!;
      numbers[at + 1] = run.groupEnds[group]!;
    }
    this.length = at;
  }
}

/** Runs with fewer digits than this are of no use to any detector (the shortest phone number has 7). */
export const MIN_RUN_DIGITS = 7;

const DIGIT = /[0-9]/g;

interface ScratchRun {
  start: number;
  end: number;
  groups: number;
  readonly groupStarts: number[];
  readonly groupEnds: number[];
  digits: string;
  readonly digitOffsets: number[];
  plus: number;
}

const scratchRun = (): ScratchRun => ({
  start: 0,
  end: 0,
  groups: 0,
  groupStarts: [],
  groupEnds: [],
  digits: '',
  digitOffsets: [0],
  plus: -1,
});

/** Sets the digit offsets of a run whose groups are set, and its digits when asked. */
function collectDigits(text: string, run: ScratchRun, withDigits: boolean): void {
  let digits = '';
  for (let group = 0; group < run.groups; group += 1) {
    const start = run.groupStarts[group]!;
    const end = run.groupEnds[group]!;
    if (withDigits) digits += text.slice(start, end);
    run.digitOffsets[group + 1] = run.digitOffsets[group]! + end - start;
  }
  run.digits = digits;
}

/** Calls `visit` with each run of `text` that has at least MIN_RUN_DIGITS digits (one reused object, see eachRun). */
function forEachDigitRun(text: string, visit: (run: DigitRun) => void, withDigits: boolean): void {
  const run = scratchRun();
  const starts = run.groupStarts;
  const ends = run.groupEnds;
  const length = text.length;
  let index = 0;
  while (index < length) {
    // The regex engine finds the next digit much faster than a character loop; test() builds no match array.
    DIGIT.lastIndex = index;
    if (!DIGIT.test(text)) break;
    index = DIGIT.lastIndex - 1;
    let groups = 0;
    let digitCount = 0;
    for (;;) {
      const groupStart = index;
      while (index < length && isDigitCode(text.charCodeAt(index))) index += 1;
      starts[groups] = groupStart;
      ends[groups] = index;
      groups += 1;
      digitCount += index - groupStart;
      let next = index;
      while (next < length && next - index < MAX_SEPARATOR_RUN && isSeparatorCode(text.charCodeAt(next))) next += 1;
      if (next > index && next < length && isDigitCode(text.charCodeAt(next))) index = next;
      else break;
    }
    if (digitCount < MIN_RUN_DIGITS) continue;
    const start = starts[0]!;
    let plus = -1;
    if (start >= 1 && text.charCodeAt(start - 1) === 43) plus = start - 1;
    else if (start >= 2 && text.charCodeAt(start - 1) === 32 && text.charCodeAt(start - 2) === 43) plus = start - 2;
    run.start = start;
    run.end = index;
    run.plus = plus;
    run.groups = groups;
    collectDigits(text, run, withDigits);
    visit(run);
  }
}

/** Calls `visit` with each run recorded in `table` (see Scan.runTable). */
function replayRuns(text: string, table: RunTable, visit: (run: DigitRun) => void, withDigits: boolean): void {
  const run = scratchRun();
  const numbers = table.numbers;
  let at = 0;
  while (at < table.length) {
    run.start = numbers[at]!;
    run.end = numbers[at + 1]!;
    run.plus = numbers[at + 2]!;
    run.groups = numbers[at + 3]!;
    at += 4;
    for (let group = 0; group < run.groups; group += 1, at += 2) {
      run.groupStarts[group] = numbers[at]!;
      run.groupEnds[group] = numbers[at + 1]!;
    }
    collectDigits(text, run, withDigits);
    visit(run);
  }
}

/** Digits of groups first..last of a run. */
export function windowDigits(run: DigitRun, first: number, last: number): string {
  return run.digits.slice(run.digitOffsets[first]!, run.digitOffsets[last + 1]!);
}

/** A window may start at group `first` / end at group `last` only if no letter or digit touches it outside. */
export function windowBoundaryOk(text: string, run: DigitRun, first: number, last: number): boolean {
  if (first === 0) {
    if (isWordChar(text, run.start - 1)) return false;
  } else if (isDot(text, run.groupEnds[first - 1]!, run.groupStarts[first]!)) return false;
  if (last === run.groups - 1) {
    if (isWordChar(text, run.end)) return false;
  } else if (isDot(text, run.groupEnds[last]!, run.groupStarts[last + 1]!)) return false;
  return true;
}

/** A single '.' binds its groups (decimals, dotted quads, "1234.56.782"): windows never cut there. */
function isDot(text: string, from: number, to: number): boolean {
  return to - from === 1 && text.charCodeAt(from) === 46;
}

export interface Detector {
  readonly ids: readonly DetectorId[];
  run(scan: Scan, out: Candidate[]): void;
}

/** Every match of a global regex (lastIndex reset first; empty matches step on). */
export function* allMatches(pattern: RegExp, text: string): Generator<RegExpExecArray> {
  pattern.lastIndex = 0;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    if (match[0].length === 0) pattern.lastIndex += 1;
    yield match;
  }
}

/** Lengths of the groups first..last: "3,3,4" for "943 476 5919". */
export function grouping(run: DigitRun, first: number, last: number): string {
  const sizes: number[] = [];
  for (let group = first; group <= last; group += 1) sizes.push(run.groupEnds[group]! - run.groupStarts[group]!);
  return sizes.join(',');
}
