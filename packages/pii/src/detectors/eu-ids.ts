import { esControlLetter, frNir, itCodiceFiscale } from '../checksums';
import { wordList, WordStartPattern, type Candidate, type Detector, type Scan } from '../scan';

/**
 * National ids with letters in them: Spanish DNI and NIE (mod-23 control letter), the Italian codice fiscale
 * (check character, odd/even tables mod 26, "omocodia" letters for digits accepted) and the French NIR of people
 * born in Corsica (department 2A/2B). The all-digit ids are in numeric.ts.
 */

const ES_CONTEXT = wordList([
  'dni',
  'nie',
  'nif',
  'documento nacional',
  'identidad',
  'número de identidad',
  'numero de identidad',
  'extranjero',
  'carnet',
]);
const IT_CONTEXT = wordList(['codice fiscale', 'cf', 'c.f', 'tessera sanitaria', 'fiscal code', 'tax code']);
const FR_CONTEXT = wordList(['nir', 'insee', 'sécurité sociale', 'securite sociale', 'sécu', 'secu', 'carte vitale']);

/** DNI: 8 digits (dots allowed as thousands separators) and a letter; NIE: X/Y/Z, 7 digits, a letter. */
export const DNI = new WordStartPattern(/(\d{2}\.?\d{3}\.?\d{3})[ -]?([A-Za-z])(?![\p{L}\p{N}_])/u);
export const NIE = new WordStartPattern(/([XYZxyz])[ -]?(\d{7})[ -]?([A-Za-z])(?![\p{L}\p{N}_])/u);
const CF_DIGIT = '[0-9LMNP-V]';
export const CODICE_FISCALE = new WordStartPattern(
  new RegExp(`[A-Z]{6}${CF_DIGIT}{2}[ABCDEHLMPRST]${CF_DIGIT}{2}[A-Z]${CF_DIGIT}{3}[A-Z](?![\\p{L}\\p{N}_])`, 'iu'),
);
export const NIR_CORSICA = new WordStartPattern(
  /([1-478])[ .-]?(\d{2})[ .-]?(\d{2})[ .-]?(2[AaBb])[ .-]?(\d{3})[ .-]?(\d{3})[ .-]?(\d{2})(?![\p{L}\p{N}_])/u,
);

export const euIdDetector: Detector = {
  ids: ['es_dni', 'es_nie', 'it_codice_fiscale', 'fr_nir'],
  run(scan: Scan, out: Candidate[]): void {
    for (const match of scan.wordStartMatches(DNI)) {
      const digits = match[1]!.replace(/\./g, '');
      const letter = match[2]!;
      if (esControlLetter(digits) !== letter.toUpperCase()) continue;
      const start = match.index;
      const end = start + match[0].length;
      const base = letter === letter.toUpperCase() ? 0.6 : 0.45;
      out.push({
        detector: 'es_dni',
        type: 'NATIONAL_ID',
        start,
        end,
        confidence: scan.score(base, start, end, ES_CONTEXT),
        canonical: digits + letter.toUpperCase(),
      });
    }
    for (const match of scan.wordStartMatches(NIE)) {
      const prefix = match[1]!.toUpperCase();
      const letter = match[3]!;
      const number = String('XYZ'.indexOf(prefix)) + match[2]!;
      if (esControlLetter(number) !== letter.toUpperCase()) continue;
      const start = match.index;
      const end = start + match[0].length;
      out.push({
        detector: 'es_nie',
        type: 'NATIONAL_ID',
        start,
        end,
        confidence: scan.score(0.65, start, end, ES_CONTEXT),
        canonical: prefix + match[2]! + letter.toUpperCase(),
      });
    }
    for (const match of scan.wordStartMatches(CODICE_FISCALE)) {
      const code = match[0].toUpperCase();
      if (!itCodiceFiscale(code)) continue;
      const start = match.index;
      const end = start + code.length;
      out.push({
        detector: 'it_codice_fiscale',
        type: 'NATIONAL_ID',
        start,
        end,
        confidence: scan.score(0.85, start, end, IT_CONTEXT, { negative: null }),
        canonical: code,
      });
    }
    for (const match of scan.wordStartMatches(NIR_CORSICA)) {
      const value = match.slice(1).join('').toUpperCase();
      if (!frNir(value)) continue;
      const start = match.index;
      const end = start + match[0].length;
      out.push({
        detector: 'fr_nir',
        type: 'NATIONAL_ID',
        start,
        end,
        confidence: scan.score(0.6, start, end, FR_CONTEXT),
        canonical: value,
      });
    }
  },
};
