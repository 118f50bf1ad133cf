import type * as Ibantools from 'ibantools' with { 'resolution-mode': 'import' };
import {
  allMatches,
  isSeparatorCode,
  isWordChar,
  MAX_SEPARATOR_RUN,
  wordList,
  type Candidate,
  type Detector,
  type Scan,
} from '../scan';

/**
 * IBANs: a country code and two check digits at a word start, then the BBAN's letters and digits, with up to
 * MAX_SEPARATOR_RUN separators between groups ("GB82 WEST 1234 5698 7654 32", "gb82-west-…", "DE89 3704 0044
 * 0532 0130 00"). Exactly the country's length is taken (ibantools' table), then ISO 13616 mod 97 and the
 * country's BBAN format are checked (ibantools `isValidIBAN`). The value must end at a group boundary.
 */

// ibantools is "type": "module" and its one .d.ts is therefore typed as ESM, but its package exports give
// require() a CommonJS build (build/ibantools.cjs): load that, typed from the ESM declarations.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { countrySpecs, isValidIBAN } = require('ibantools') as typeof Ibantools;

const IBAN_CONTEXT = wordList(['iban', 'bank', 'account', 'transfer', 'sepa', 'bic', 'swift', 'konto', 'rib']);
const START = /(?<![\p{L}\p{N}_])[A-Za-z]{2}[0-9]{2}/gu;
const MAX_IBAN = 34;

const isAsciiAlnum = (unit: number): boolean =>
  (unit >= 48 && unit <= 57) || (unit >= 65 && unit <= 90) || (unit >= 97 && unit <= 122);

export const ibanDetector: Detector = {
  ids: ['iban'],
  run(scan: Scan, out: Candidate[]): void {
    const text = scan.text;
    for (const match of allMatches(START, text)) {
      const start = match.index;
      const country = match[0].slice(0, 2).toUpperCase();
      const length = countrySpecs[country]?.chars;
      if (length === undefined || length > MAX_IBAN) continue;
      let value = match[0].toUpperCase();
      let index = start + 4;
      while (value.length < length && index < text.length) {
        const unit = text.charCodeAt(index);
        if (isAsciiAlnum(unit)) {
          value += text[index]!.toUpperCase();
          index += 1;
          continue;
        }
        let next = index;
        while (next < text.length && next - index < MAX_SEPARATOR_RUN && isSeparatorCode(text.charCodeAt(next))) {
          next += 1;
        }
        if (next === index || next >= text.length || !isAsciiAlnum(text.charCodeAt(next))) break;
        index = next;
      }
      if (value.length !== length || isWordChar(text, index)) continue;
      if (!isValidIBAN(value)) continue;
      out.push({
        detector: 'iban',
        type: 'IBAN',
        start,
        end: index,
        confidence: scan.score(0.95, start, index, IBAN_CONTEXT, { negative: null }),
        canonical: value,
      });
      START.lastIndex = index;
    }
  },
};
