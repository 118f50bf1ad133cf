import { validDate } from '../checksums';
import { allMatches, wordList, WordStartPattern, type Candidate, type Detector, type Scan } from '../scan';

/**
 * Dates of birth and passport numbers: patterns that match far too much on their own (every date, every
 * 9-character code), so they are reported only with a context word near them: the base score is below any
 * threshold and the context boost (0.5) lifts it over. A date after the day of the request (Scan.now) is not a
 * date of birth, whatever the context.
 */

const DOB_CONTEXT = wordList([
  'born',
  'birth',
  'date of birth',
  'birth date',
  'birthdate',
  'birthday',
  'dob',
  'd.o.b',
  'd.o.b.',
  'geboren',
  'geburtsdatum',
  'geb',
  'né',
  'née',
  'ne le',
  'date de naissance',
  'naissance',
  'fecha de nacimiento',
  'nacimiento',
  'nacido',
  'nacida',
  'data di nascita',
  'nascita',
  'nato',
  'nata',
  'geboortedatum',
  'data urodzenia',
  'urodzony',
  'urodzona',
  'urodzenia',
]);

const MONTHS: ReadonlyArray<readonly [number, readonly string[]]> = [
  [1, ['january', 'jan', 'januar', 'janvier', 'enero', 'gennaio', 'januari', 'stycznia', 'styczeń', 'jänner']],
  [2, ['february', 'feb', 'februar', 'février', 'fevrier', 'febrero', 'febbraio', 'februari', 'lutego', 'luty']],
  [3, ['march', 'mar', 'märz', 'maerz', 'mars', 'marzo', 'maart', 'marca', 'marzec']],
  [4, ['april', 'apr', 'avril', 'abril', 'aprile', 'kwietnia', 'kwiecień']],
  [5, ['may', 'mai', 'mayo', 'maggio', 'mei', 'maja', 'maj']],
  [6, ['june', 'jun', 'juni', 'juin', 'junio', 'giugno', 'czerwca', 'czerwiec']],
  [7, ['july', 'jul', 'juli', 'juillet', 'julio', 'luglio', 'lipca', 'lipiec']],
  [8, ['august', 'aug', 'août', 'aout', 'agosto', 'augustus', 'sierpnia', 'sierpień']],
  [9, ['september', 'sep', 'sept', 'septembre', 'septiembre', 'settembre', 'września', 'wrzesień']],
  [10, ['october', 'oct', 'oktober', 'octobre', 'octubre', 'ottobre', 'października', 'październik']],
  [11, ['november', 'nov', 'novembre', 'noviembre', 'listopada', 'listopad']],
  [12, ['december', 'dec', 'dezember', 'décembre', 'decembre', 'diciembre', 'dicembre', 'grudnia', 'grudzień']],
];
const MONTH_OF = new Map<string, number>(MONTHS.flatMap(([month, names]) => names.map((name) => [name, month])));
const MONTH_NAMES = [...MONTH_OF.keys()].sort((a, b) => b.length - a.length).join('|');

const SEP = '\\s?[./-]\\s?';
const NUMERIC = new RegExp(`(?<![\\p{N}.])(\\d{1,2})${SEP}(\\d{1,2})${SEP}(\\d{4}|\\d{2})(?![\\p{N}]|\\.\\p{N})`, 'gu');
const ISO = /(?<![\p{N}.])(\d{4})-(\d{1,2})-(\d{1,2})(?!\p{N})/gu;
const DAY_MONTH_YEAR = new RegExp(
  `(?<![\\p{L}\\p{N}])(\\d{1,2})(?:st|nd|rd|th|er|º|\\.)?\\s(?:of\\s|de\\s)?(${MONTH_NAMES})\\.?,?\\s(?:de\\s)?(\\d{4})(?!\\p{N})`,
  'giu',
);
/** A month name, then day and year; tried only where DAY_YEAR_TAIL matched (see monthDayYearMatches). */
export const MONTH_DAY_YEAR_AT = new RegExp(
  `(?<![\\p{L}\\p{N}])(${MONTH_NAMES})\\.?\\s(\\d{1,2})(?:st|nd|rd|th)?,?\\s(\\d{4})(?!\\p{N})`,
  'iuy',
);
/** What follows the month name (and its optional '.') in MONTH_DAY_YEAR_AT. */
const DAY_YEAR_TAIL = /\s\d{1,2}(?:st|nd|rd|th)?,?\s\d{4}(?!\p{N})/giu;
const LETTER = /^\p{L}$/u;
const LONGEST_MONTH = Math.max(...[...MONTH_OF.keys()].map((name) => name.length));
const SHORTEST_MONTH = Math.min(...[...MONTH_OF.keys()].map((name) => name.length));

const isLetterUnit = (unit: number): boolean =>
  unit < 0x80 ? (unit | 0x20) >= 97 && (unit | 0x20) <= 122 : LETTER.test(String.fromCharCode(unit));

/**
 * The matches of MONTH_DAY_YEAR_AT that a global scan would give, in order, without running the month names
 * (a hundred alternatives at every word start) over the whole text. A month name is letters only, with no
 * letter or digit before it and '.' or whitespace after it, so it is the whole letter run ending before the
 * tail "12 2024": each tail (a much cheaper scan, and rare in prose) names the one place a match can start.
 */
export function* monthDayYearMatches(text: string): Generator<RegExpExecArray> {
  DAY_YEAR_TAIL.lastIndex = 0;
  for (let tail = DAY_YEAR_TAIL.exec(text); tail !== null; tail = DAY_YEAR_TAIL.exec(text)) {
    const at = tail.index;
    const end = at > 0 && text.charCodeAt(at - 1) === 46 ? at - 1 : at;
    let start = end;
    while (start > 0 && end - start <= LONGEST_MONTH && isLetterUnit(text.charCodeAt(start - 1))) start -= 1;
    if (end - start >= SHORTEST_MONTH && end - start <= LONGEST_MONTH) {
      MONTH_DAY_YEAR_AT.lastIndex = start;
      const match = MONTH_DAY_YEAR_AT.exec(text);
      if (match !== null) {
        yield match;
        DAY_YEAR_TAIL.lastIndex = match.index + match[0].length;
        continue;
      }
    }
    DAY_YEAR_TAIL.lastIndex = at + 1;
  }
}

const yearOf = (text: string): number => (text.length === 2 ? 1900 + Number(text) : Number(text));
const plausibleYear = (year: number): boolean => year >= 1900 && year <= 2099;

/** The furthest time zone ahead of UTC (UTC+14): its date is the latest calendar date anywhere on Earth. */
const FURTHEST_AHEAD_MS = 14 * 3_600_000;

/**
 * The latest date of birth possible at `now`, as yyyymmdd: today's date where it is already latest, so that a
 * baby born today anywhere is still a date of birth while tomorrow is not.
 */
export function latestBirthDate(now: number): number {
  const latest = new Date(now + FURTHEST_AHEAD_MS);
  return latest.getUTCFullYear() * 10_000 + (latest.getUTCMonth() + 1) * 100 + latest.getUTCDate();
}

export const dobDetector: Detector = {
  ids: ['dob'],
  run(scan: Scan, out: Candidate[]): void {
    const text = scan.text;
    const latest = latestBirthDate(scan.now);
    const push = (start: number, end: number, year: number, month: number, day: number): void => {
      if (!plausibleYear(year) || !validDate(year, month, day)) return;
      // A date after the request's day is an appointment or a deadline, never a birth.
      if (year * 10_000 + month * 100 + day > latest) return;
      out.push({
        detector: 'dob',
        type: 'DATE_OF_BIRTH',
        start,
        end,
        confidence: scan.score(0.15, start, end, DOB_CONTEXT, { boost: 0.5 }),
        canonical: `${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`,
      });
    };
    for (const match of allMatches(NUMERIC, text)) {
      const first = Number(match[1]);
      const second = Number(match[2]);
      const year = yearOf(match[3]!);
      // Day first (UK/EU); month first only when day first is impossible.
      const [day, month] = second <= 12 && validDate(year, second, first) ? [first, second] : [second, first];
      push(match.index, match.index + match[0].length, year, month, day);
    }
    for (const match of allMatches(ISO, text)) {
      push(match.index, match.index + match[0].length, Number(match[1]), Number(match[2]), Number(match[3]));
    }
    for (const match of allMatches(DAY_MONTH_YEAR, text)) {
      const month = MONTH_OF.get(match[2]!.toLowerCase()) ?? 0;
      push(match.index, match.index + match[0].length, Number(match[3]), month, Number(match[1]));
    }
    for (const match of monthDayYearMatches(text)) {
      const month = MONTH_OF.get(match[1]!.toLowerCase()) ?? 0;
      push(match.index, match.index + match[0].length, Number(match[3]), month, Number(match[2]));
    }
  },
};

const PASSPORT_CONTEXT = wordList([
  'passport',
  'passport no',
  'passport number',
  'travel document',
  'hmpo',
  'reisepass',
  'pass-nr',
  'passnummer',
  'passeport',
  'pasaporte',
  'passaporto',
  'paspoort',
  'paszport',
  'paszportu',
]);

/**
 * Passport numbers: UK (two letters and seven digits since 2015, nine digits before), FR (2 digits, 2 letters,
 * 5 digits), ES (3 letters, 6 digits), IT/PL (2 letters, 7 digits), DE/NL (9 characters without vowels-like
 * ambiguous letters, at least two digits), one letter and 7–8 digits. Upper case, no spaces.
 */
export const PASSPORT = new WordStartPattern(
  /(?:[A-Z]{2}\d{7}|\d{9}|\d{2}[A-Z]{2}\d{5}|[A-Z]{3}\d{6}|[A-Z]\d{7,8}|[CFGHJKLMNPRTVWXYZ][CFGHJKLMNPRTVWXYZ\d]{8})(?![\p{L}\p{N}_])/u,
);

export const passportDetector: Detector = {
  ids: ['passport'],
  run(scan: Scan, out: Candidate[]): void {
    for (const match of scan.wordStartMatches(PASSPORT)) {
      const value = match[0];
      if (value.replace(/\D/g, '').length < 2) continue;
      const start = match.index;
      const end = start + value.length;
      out.push({
        detector: 'passport',
        type: 'PASSPORT',
        start,
        end,
        confidence: scan.score(0.15, start, end, PASSPORT_CONTEXT, { boost: 0.5 }),
        canonical: value,
      });
    }
  },
};
