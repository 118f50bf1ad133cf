import { wordList, WordStartPattern, type Candidate, type Detector, type Scan } from '../scan';

/**
 * UK National Insurance numbers and postcodes. Both are format rules only (no checksum exists), so the patterns
 * carry the allocation rules, and a weak form (no suffix, lower case) needs a context word.
 */

const NINO_CONTEXT = wordList([
  'national insurance',
  'national insurance number',
  'ni number',
  'ni no',
  'nino',
  'nin',
  'insurance number',
  'hmrc',
]);

/**
 * NINO: first letter not D, F, I, Q, U, V; second not D, F, I, O, Q, U, V; prefixes BG, GB, KN, NK, NT, TN, ZZ
 * never allocated; six digits (pairs may be spaced); suffix A–D (optional in the wild).
 */
export const NINO = new WordStartPattern(
  /([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z])[ -]{0,2}(\d{2})[ -]{0,2}(\d{2})[ -]{0,2}(\d{2})(?:[ -]{0,2}([A-D]))?(?![\p{L}\p{N}_])/iu,
);
const NINO_EXCLUDED = new Set(['BG', 'GB', 'KN', 'NK', 'NT', 'TN', 'ZZ']);

const POSTCODE_CONTEXT = wordList([
  'postcode',
  'post code',
  'postal code',
  'address',
  'delivery',
  'deliver',
  'shipping',
  'street',
  'road',
  'lane',
  'avenue',
  'flat',
  'house',
  'lives',
  'live at',
  'london',
  'manchester',
  'birmingham',
  'uk',
]);

/**
 * Royal Mail formats A9 9AA, A99 9AA, AA9 9AA, AA99 9AA, A9A 9AA, AA9A 9AA, and GIR 0AA: first letter not Q, V,
 * X; second not I, J, Z; the letter after A9 from ABCDEFGHJKPSTUW, after AA9 from ABEHMNPRVWXY; the inward part
 * never uses C, I, K, M, O, V.
 */
export const POSTCODE = new WordStartPattern(
  /(?:GIR {0,2}0AA|(?:[A-PR-UWYZ](?:\d{1,2}|[A-HK-Y]\d{1,2}|\d[A-HJKPSTUW]|[A-HK-Y]\d[ABEHMNPRV-Y])) {0,2}\d[ABD-HJLNP-UW-Z]{2})(?![\p{L}\p{N}_])/iu,
);

export const ukDetector: Detector = {
  ids: ['uk_nino', 'uk_postcode'],
  run(scan: Scan, out: Candidate[]): void {
    for (const match of scan.wordStartMatches(NINO)) {
      const prefix = match[1]!;
      const upperPrefix = prefix.toUpperCase();
      if (NINO_EXCLUDED.has(upperPrefix)) continue;
      const suffix = match[5];
      const start = match.index;
      const end = start + match[0].length;
      let base = suffix === undefined ? 0.45 : 0.75;
      if (prefix !== upperPrefix || (suffix !== undefined && suffix !== suffix.toUpperCase())) base -= 0.1;
      out.push({
        detector: 'uk_nino',
        type: 'UK_NINO',
        start,
        end,
        confidence: scan.score(base, start, end, NINO_CONTEXT),
        canonical: `${upperPrefix}${match[2]}${match[3]}${match[4]}${(suffix ?? '').toUpperCase()}`,
      });
    }
    for (const match of scan.wordStartMatches(POSTCODE)) {
      const value = match[0];
      const start = match.index;
      const end = start + value.length;
      const upper = value === value.toUpperCase();
      const spaced = value.includes(' ');
      const base = upper ? (spaced ? 0.6 : 0.45) : 0.3;
      out.push({
        detector: 'uk_postcode',
        type: 'UK_POSTCODE',
        start,
        end,
        confidence: scan.score(base, start, end, POSTCODE_CONTEXT),
        canonical: value.replace(/ /g, '').toUpperCase(),
      });
    }
  },
};
