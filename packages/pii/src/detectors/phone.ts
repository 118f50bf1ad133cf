import { Metadata, parsePhoneNumberFromString, type CountryCode, type MetadataJson } from 'libphonenumber-js/core';
import maxMetadata from 'libphonenumber-js/max/metadata';
import { windowBoundaryOk, wordList, type Candidate, type Detector, type DigitRun, type Scan } from '../scan';

/**
 * Phone numbers, validated against libphonenumber's full ("max") number plans.
 *
 * Candidates are windows of digit groups (see DigitRun), so that "+44 (0)20 7946 0958", "020-7946-0958" and
 * "0 2 0 7 9 4 6 0 9 5 8" are all found:
 * - international: a run after '+', or starting with "00": any country, base 0.75;
 * - national with the trunk prefix 0 (UK, IE, FR, DE, NL, BE, LU, AT, CH, IT, SE, FI, …): GB first (0.6), then
 *   the EU plans (0.5); fewer than 10 digits (0.4) need a context word;
 * - national without a trunk prefix (ES, PT, PL, DK, GR, IT mobiles, …): only next to a phone context word.
 * libphonenumber's parse costs tens of microseconds, so a cheap check against each plan's possible lengths and
 * national number pattern comes first, and results are memoised per call; at most MAX_WINDOWS_PER_START windows
 * are tried from each starting group.
 */

const metadata = maxMetadata as unknown as MetadataJson;

export const PHONE_CONTEXT = wordList([
  'phone',
  'telephone',
  'tel',
  'mobile',
  'mob',
  'cell',
  'cellphone',
  'call',
  'ring',
  'text me',
  'whatsapp',
  'contact',
  'number',
  'fax',
  'telefon',
  'telefonnummer',
  'handy',
  'mobil',
  'téléphone',
  'telephone',
  'portable',
  'teléfono',
  'telefono',
  'móvil',
  'movil',
  'cellulare',
  'telefoon',
  'mobiel',
  'komórka',
  'komorka',
  'numer telefonu',
]);

/** UK and EU (plus EEA and CH) plans whose national numbers start with the trunk prefix 0. */
const TRUNK_REGIONS: readonly CountryCode[] = [
  'GB', 'IE', 'FR', 'DE', 'NL', 'BE', 'LU', 'AT', 'CH', 'IT', 'SE', 'FI', 'HU', 'RO', 'BG', 'HR', 'SI', 'SK', 'CZ',
  'LT', 'LV', 'EE', 'IS', 'NO',
]; // prettier-ignore
/** Plans written without a trunk prefix: ES, PT, PL, DK, GR, IT (mobiles), MT, CY, LU, NO, CZ, SK. */
const NO_TRUNK_REGIONS: readonly CountryCode[] = [
  'ES',
  'PT',
  'PL',
  'DK',
  'GR',
  'IT',
  'MT',
  'CY',
  'LU',
  'NO',
  'CZ',
  'SK',
];

interface Plan {
  readonly lengths: ReadonlySet<number>;
  readonly pattern: RegExp;
}

interface PlanAccess {
  possibleLengths(): number[];
  nationalNumberPattern(): string;
}

const plans = new Map<string, Plan | null>();

function planOf(country: CountryCode): Plan | null {
  const known = plans.get(country);
  if (known !== undefined) return known;
  let plan: Plan | null = null;
  try {
    const reader = new Metadata(metadata);
    reader.selectNumberingPlan(country);
    const numberingPlan = reader.numberingPlan as unknown as PlanAccess | undefined;
    if (numberingPlan !== undefined) {
      plan = {
        lengths: new Set(numberingPlan.possibleLengths()),
        pattern: new RegExp(`^(?:${numberingPlan.nationalNumberPattern()})$`),
      };
    }
  } catch {
    plan = null;
  }
  plans.set(country, plan);
  return plan;
}

/** Cheap necessary condition: the national significant number fits the plan's lengths and general pattern. */
function plausible(country: CountryCode, nationalNumber: string): boolean {
  const plan = planOf(country);
  return plan !== null && plan.lengths.has(nationalNumber.length) && plan.pattern.test(nationalNumber);
}

function parsedValid(text: string, country: CountryCode | undefined): string | null {
  const parsed =
    country === undefined
      ? parsePhoneNumberFromString(text, metadata)
      : parsePhoneNumberFromString(text, country, metadata);
  return parsed !== undefined && parsed.isValid() ? parsed.number : null;
}

const callingCodes = metadata.country_calling_codes as Record<string, CountryCode[] | undefined>;

/** E.164 of an international number given as digits after '+' or "00", or null. */
function international(digits: string): string | null {
  for (let size = 1; size <= 3 && size < digits.length; size += 1) {
    const countries = callingCodes[digits.slice(0, size)];
    if (countries === undefined) continue;
    const national = digits.slice(size);
    if (!countries.some((country) => plausible(country, national))) return null;
    return parsedValid(`+${digits}`, undefined);
  }
  return null;
}

/** E.164 and whether it is a UK number, for a national number in one of the regions, or null. */
function national(digits: string, regions: readonly CountryCode[]): { e164: string; uk: boolean } | null {
  const withoutTrunk = digits[0] === '0' ? digits.slice(1) : null;
  for (const region of regions) {
    if (!plausible(region, digits) && (withoutTrunk === null || !plausible(region, withoutTrunk))) continue;
    const e164 = parsedValid(digits, region);
    if (e164 !== null) return { e164, uk: region === 'GB' };
  }
  return null;
}

/** Windows tried from one starting group (longest first): bounds the libphonenumber calls per group. */
const MAX_WINDOWS_PER_START = 6;

/** Digits of a window, leaving out a "(0)" group (the UK habit "+44 (0)20 …"). */
function phoneDigits(text: string, run: DigitRun, first: number, last: number): string {
  let digits = '';
  for (let group = first; group <= last; group += 1) {
    const start = run.groupStarts[group]!;
    const end = run.groupEnds[group]!;
    if (group > first && end - start === 1 && text[start] === '0' && text[start - 1] === '(' && text[end] === ')') {
      continue;
    }
    digits += text.slice(start, end);
  }
  return digits;
}

export const phoneDetector: Detector = {
  ids: ['phone'],
  run(scan: Scan, out: Candidate[]): void {
    const text = scan.text;
    const memo = new Map<string, { e164: string; base: number } | null>();
    const check = (key: string, compute: () => { e164: string; base: number } | null) => {
      let result = memo.get(key);
      if (result === undefined) {
        result = compute();
        memo.set(key, result);
      }
      return result;
    };
    scan.eachRun((run) => {
      const groups = run.groups;
      if (run.digitOffsets[groups]! < 7) return;
      let contextChecked = false;
      let hasContext = false;
      let first = 0;
      while (first < groups) {
        const groupDigits = run.groupEnds[first]! - run.groupStarts[first]!;
        const firstChar = text[run.groupStarts[first]!];
        const isPlus = first === 0 && run.plus >= 0;
        const isDoubleZero = text.startsWith('00', run.groupStarts[first]!) && groupDigits >= 2;
        const isTrunk = firstChar === '0' && !isDoubleZero && (first === 0 || groupDigits >= 2);
        const noTrunk = first === 0 && firstChar !== '0' && !isPlus;
        if (noTrunk && !contextChecked) {
          contextChecked = true;
          hasContext = scan.near(PHONE_CONTEXT, run.start, run.end);
        }
        let found = -1;
        if (isPlus || isDoubleZero || isTrunk || (noTrunk && hasContext)) {
          // Longest first: the ends (group indices) whose digit count fits a phone number, from at most 17 digits
          // down to at least 7.
          let longest = first - 1;
          while (longest + 1 < groups && run.digitOffsets[longest + 2]! - run.digitOffsets[first]! <= 17) longest += 1;
          let tried = 0;
          for (let last = longest; last >= first; last -= 1) {
            if (run.digitOffsets[last + 1]! - run.digitOffsets[first]! < 7) break;
            if (tried >= MAX_WINDOWS_PER_START) break;
            if (!windowBoundaryOk(text, run, first, last)) continue;
            const digits = phoneDigits(text, run, first, last);
            let result: { e164: string; base: number } | null = null;
            if (isPlus || isDoubleZero) {
              const rest = isPlus ? digits : digits.slice(2);
              if (rest.length < 7 || rest.length > 15) continue;
              tried += 1;
              result = check(`+${rest}`, () => {
                const e164 = international(rest);
                return e164 === null ? null : { e164, base: 0.75 };
              });
            } else if (isTrunk) {
              if (digits.length < 8 || digits.length > 13) continue;
              tried += 1;
              result = check(`0:${digits}`, () => {
                const found = national(digits, TRUNK_REGIONS);
                if (found === null) return null;
                // Short national numbers ("0800-1700" is also an opening time) need a context word.
                return { e164: found.e164, base: digits.length < 10 ? 0.4 : found.uk ? 0.6 : 0.5 };
              });
            } else {
              if (digits.length < 8 || digits.length > 12) continue;
              tried += 1;
              result = check(`n:${digits}`, () => {
                const found = national(digits, NO_TRUNK_REGIONS);
                return found === null ? null : { e164: found.e164, base: 0.3 };
              });
            }
            if (result !== null) {
              const start = isPlus ? run.plus : run.groupStarts[first]!;
              const end = run.groupEnds[last]!;
              out.push({
                detector: 'phone',
                type: 'PHONE',
                start,
                end,
                // A valid number written whole (international, or national with its trunk 0) is a phone number
                // whatever words stand before it ("order", "tracking"); shorter ones still weigh them.
                confidence: scan.score(result.base, start, end, PHONE_CONTEXT, {
                  negative: result.base >= 0.6 ? null : undefined,
                }),
                canonical: result.e164,
              });
              found = last;
              break;
            }
          }
        }
        first = found >= 0 ? found + 1 : first + 1;
      }
    }, false);
  },
};
