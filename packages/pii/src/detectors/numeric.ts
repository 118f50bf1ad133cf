import { allSameDigit, deSteuerId, frNir, luhn, nhsMod11, nlBsn, plPesel } from '../checksums';
import { grouping, windowBoundaryOk, windowDigits, wordList, type Candidate, type Detector, type Scan } from '../scan';

/**
 * Numbers made of digits only, found as windows of whole digit groups of a run (see DigitRun): payment cards,
 * NHS numbers, and the national ids of Germany (Steuer-ID), France (NIR), the Netherlands (BSN) and Poland
 * (PESEL). Every one needs its checksum; bare digits that pass a weak checksum (≈ 1 in 10 or 11) still need a
 * context word to reach the threshold.
 */

export const CARD_CONTEXT = wordList([
  'card',
  'credit',
  'debit',
  'visa',
  'mastercard',
  'master card',
  'amex',
  'american express',
  'maestro',
  'discover',
  'jcb',
  'diners',
  'unionpay',
  'cc',
  'cvv',
  'cvc',
  'expiry',
  'pan',
  'payment',
  'kreditkarte',
  'carte bancaire',
  'tarjeta',
  'carta di credito',
]);
export const NHS_CONTEXT = wordList([
  'nhs',
  'nhs no',
  'national health service',
  'health service',
  'health authority',
  'health services authority',
  'chi',
  'community health index',
  'h&c',
  'health and care',
  'patient',
]);
const DE_CONTEXT = wordList([
  'steuer',
  'steuer-id',
  'steuerid',
  'steuer id',
  'steuernummer',
  'steueridentifikationsnummer',
  'identifikationsnummer',
  'idnr',
  'tin',
  'tax id',
  'tax identification',
  'finanzamt',
]);
const FR_CONTEXT = wordList([
  'nir',
  'insee',
  'sécurité sociale',
  'securite sociale',
  'sécu',
  'secu',
  'carte vitale',
  'social security',
  'numéro de sécurité sociale',
]);
const NL_CONTEXT = wordList(['bsn', 'burgerservicenummer', 'sofinummer', 'sofi', 'citizen service number']);
const PL_CONTEXT = wordList(['pesel', 'numer pesel']);

/** Issuer prefix and length of the card schemes (Visa, Mastercard, Amex, Diners, JCB, Discover, UnionPay, Maestro). */
export function cardScheme(digits: string): boolean {
  const length = digits.length;
  const two = Number(digits.slice(0, 2));
  const three = Number(digits.slice(0, 3));
  const four = Number(digits.slice(0, 4));
  if (digits[0] === '4') return length === 13 || length === 16 || length === 19;
  if ((two >= 51 && two <= 55) || (four >= 2221 && four <= 2720)) return length === 16;
  if (two === 34 || two === 37) return length === 15;
  if (two === 36 || two === 38 || two === 39 || (three >= 300 && three <= 305)) return length >= 14 && length <= 19;
  if ((four >= 3528 && four <= 3589) || four === 6011 || two === 65 || (three >= 644 && three <= 649) || two === 62) {
    return length >= 16 && length <= 19;
  }
  if (two === 50 || (two >= 56 && two <= 69)) return length >= 13 && length <= 19;
  return false;
}

function emit(
  out: Candidate[],
  detector: Candidate['detector'],
  type: Candidate['type'],
  start: number,
  end: number,
  confidence: number,
  canonical: string,
): void {
  out.push({ detector, type, start, end, confidence, canonical });
}

export const numericDetector: Detector = {
  ids: ['card', 'nhs', 'nl_bsn', 'pl_pesel', 'de_steuer_id', 'fr_nir'],
  run(scan: Scan, out: Candidate[]): void {
    const text = scan.text;
    scan.eachRun((run) => {
      const groups = run.groups;
      if (run.digits.length < 9 || allSameDigit(run.digits)) return;
      for (let first = 0; first < groups; first += 1) {
        const lead = run.digits.charCodeAt(run.digitOffsets[first]!) - 48;
        for (let last = first; last < groups; last += 1) {
          const count = run.digitOffsets[last + 1]! - run.digitOffsets[first]!;
          if (count > 19) break;
          // Lengths no detector wants; 13–19 digits other than 15 can only be a card (issuer digit 2–6).
          if (count < 9 || count === 12 || (count >= 13 && count !== 15 && (lead < 2 || lead > 6))) continue;
          if (!windowBoundaryOk(text, run, first, last)) continue;
          const digits = windowDigits(run, first, last);
          const start = run.groupStarts[first]!;
          const end = run.groupEnds[last]!;
          if (count >= 13) {
            // A '+' makes it a phone number; all-same digits are filler.
            if ((first > 0 || run.plus < 0) && cardScheme(digits) && !allSameDigit(digits) && luhn(digits)) {
              // A scheme's prefix and length and a passing Luhn: a card, whatever words stand before it.
              const confidence = scan.score(0.6, start, end, CARD_CONTEXT, { negative: null });
              emit(out, 'card', 'CARD', start, end, confidence, digits);
            }
            if (count === 15 && frNir(digits)) {
              emit(out, 'fr_nir', 'NATIONAL_ID', start, end, scan.score(0.6, start, end, FR_CONTEXT), digits);
            }
          } else if (count === 10) {
            if (nhsMod11(digits)) {
              const base = grouping(run, first, last) === '3,3,4' ? 0.5 : 0.4;
              emit(out, 'nhs', 'NHS_NUMBER', start, end, scan.score(base, start, end, NHS_CONTEXT), digits);
            }
          } else if (count === 9) {
            if (nlBsn(digits))
              emit(out, 'nl_bsn', 'NATIONAL_ID', start, end, scan.score(0.4, start, end, NL_CONTEXT), digits);
          } else if (count === 11) {
            if (plPesel(digits)) {
              emit(out, 'pl_pesel', 'NATIONAL_ID', start, end, scan.score(0.45, start, end, PL_CONTEXT), digits);
            }
            if (deSteuerId(digits)) {
              emit(out, 'de_steuer_id', 'NATIONAL_ID', start, end, scan.score(0.4, start, end, DE_CONTEXT), digits);
            }
          }
        }
      }
    });
  },
};
