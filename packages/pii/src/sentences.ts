/**
 * Where sentences end in a normalised text, so that context words count only in the sentence of the value they
 * describe ("Build 8.53 failed. PESEL: …" — "build" says nothing about the PESEL).
 *
 * A sentence ends:
 * - at '!', '?', '…' or a run of dots, followed (after closing quotes or brackets) by whitespace;
 * - at a single '.' followed by whitespace, unless the word before it is an abbreviation ("Dr.", "No.", "Tel.",
 *   "z.B.", "e.g.") or an initial ("J. Smith"); a dot between digits (8.53, 1.2.3) is never followed by
 *   whitespace, so it never ends one;
 * - at a line break, unless the line ends with ':' (a label whose value is on the next line: forms, key: value
 *   lists). Lines in prompts are mostly records (lists, forms, logs, code), each with its own context; prose
 *   hard-wrapped between a label and its value loses that context (the value's own score still stands).
 * The result is a sorted list of cut positions: sentence k is [cuts[k-1], cuts[k]).
 */

/** Words that end with a '.' without ending the sentence (compared in lower case, without the dot). */
const ABBREVIATIONS = new Set([
  // English
  'mr', 'mrs', 'ms', 'dr', 'prof', 'st', 'sr', 'jr', 'no', 'nos', 'nr', 'tel', 'fax', 'mob', 'approx', 'vs',
  'cf', 'ref', 'fig', 'vol', 'pp', 'ext', 'dept', 'apt', 'ave', 'rd',
  // German
  'geb', 'str', 'bzw', 'ggf', 'ca', 'hr', 'fr', 'hrn', 'abs', 'vgl',
  // French
  'mme', 'mlle', 'av', 'bd', 'env', 'cie',
  // Spanish
  'sra', 'srta', 'dña', 'núm', 'num', 'avda', 'pza',
  // Italian
  'sig', 'sigg', 'dott', 'ing', 'avv', 'geom',
  // Dutch
  'dhr', 'mevr', 'mw', 'ir', 'drs',
  // Polish
  'ul', 'al', 'np', 'tj', 'godz', 'tzw', 'ur', 'tzn',
]); // prettier-ignore

/** Letters with dots between them: "e.g", "i.e", "d.o.b", "U.S", "z.B" (the final dot is the one looked at). */
const DOTTED = /^(?:\p{L}{1,2}\.)+\p{L}{1,2}$/u;
/**
 * A mark of sentence punctuation, closing quotes or brackets, and whitespace; or a line break. One mark per match,
 * so that a flood of dots or quotes costs linear time (a `[.!?…]+` before a failing lookahead backtracks over the
 * whole run at every start). A line break right after a mark is part of that match: one cut, at the mark.
 */
const CANDIDATE = /[.!?…]["'”’)\]]*\s|\n/g;

const isPunctuationCode = (unit: number): boolean => unit === 46 || unit === 33 || unit === 63 || unit === 0x2026;

const isSpaceCode = (unit: number): boolean => unit === 32 || unit === 9 || unit === 13 || unit === 12;

/** Longer words are never abbreviations ('approx' is the longest) unless dotted ("d.o.b"). */
const LONGEST_ABBREVIATION = 6;

/** Where the word ending just before `dot` starts (letters, digits and inner dots), at most 24 characters back. */
function wordStart(text: string, dot: number): number {
  let start = dot;
  while (start > 0 && dot - start < 24) {
    const unit = text.charCodeAt(start - 1);
    if (isSpaceCode(unit) || unit === 10 || unit === 40 || unit === 34 || unit === 39) break;
    start -= 1;
  }
  return start;
}

function dotEndsSentence(text: string, dot: number): boolean {
  const start = wordStart(text, dot);
  if (start === dot) return true;
  // Most sentences end with a plain word longer than any abbreviation: decided without a copy or a regex.
  if (dot - start > LONGEST_ABBREVIATION && text.lastIndexOf('.', dot - 1) < start) return true;
  const word = text.slice(start, dot);
  if (DOTTED.test(word)) return false;
  // An initial ("J. Smith") or an abbreviation.
  if (/^\p{L}$/u.test(word) || ABBREVIATIONS.has(word.toLowerCase())) return false;
  return true;
}

/** True when the line ending at the newline at `index` ends with ':' (trailing spaces ignored). */
function lineEndsWithColon(text: string, index: number): boolean {
  let before = index - 1;
  while (before >= 0 && isSpaceCode(text.charCodeAt(before))) before -= 1;
  return before >= 0 && text.charCodeAt(before) === 58;
}

export function sentenceCuts(text: string): number[] {
  const cuts: number[] = [];
  CANDIDATE.lastIndex = 0;
  for (let match = CANDIDATE.exec(text); match !== null; match = CANDIDATE.exec(text)) {
    if (match[0] === '\n') {
      if (!lineEndsWithColon(text, match.index)) cuts.push(match.index);
      continue;
    }
    // A lone '.' may belong to an abbreviation; '!', '?', '…' and runs of marks ("...", "?!") always end one.
    const lone = text.charCodeAt(match.index) === 46 && !isPunctuationCode(text.charCodeAt(match.index - 1));
    const whitespace = match.index + match[0].length - 1;
    if (lone && !dotEndsSentence(text, match.index)) {
      // "Tel.\n…": not the end of a sentence, but still the end of a line.
      if (text.charCodeAt(whitespace) === 10) cuts.push(whitespace);
      continue;
    }
    // The cut goes after the closers, before the whitespace.
    cuts.push(whitespace);
  }
  return cuts;
}

/** The last cut at or before `index`, or 0. */
export function sentenceStart(cuts: readonly number[], index: number): number {
  let low = 0;
  let high = cuts.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (cuts[middle]! <= index) low = middle + 1;
    else high = middle;
  }
  return low === 0 ? 0 : cuts[low - 1]!;
}

/** The first cut at or after `index`, or `length`. */
export function sentenceEnd(cuts: readonly number[], index: number, length: number): number {
  let low = 0;
  let high = cuts.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (cuts[middle]! < index) low = middle + 1;
    else high = middle;
  }
  return low === cuts.length ? length : cuts[low]!;
}
