import fc from 'fast-check';
import { PASSPORT } from '../src/detectors/dates';
import { CODICE_FISCALE, DNI, NIE, NIR_CORSICA } from '../src/detectors/eu-ids';
import { NINO, POSTCODE } from '../src/detectors/uk';
import { Scan, type WordStartPattern } from '../src/scan';
import { VALID } from './fixtures';

/**
 * The patterns that match at word starts are tried only where one finder (all of them at once) says some may
 * match: each must give exactly the matches of a plain global scan with its own regex.
 */

const PATTERNS: ReadonlyArray<readonly [string, WordStartPattern]> = [
  ['passport', PASSPORT],
  ['DNI', DNI],
  ['NIE', NIE],
  ['codice fiscale', CODICE_FISCALE],
  ['NIR (Corsica)', NIR_CORSICA],
  ['NINO', NINO],
  ['postcode', POSTCODE],
];

function globalScan(pattern: WordStartPattern, text: string): string[] {
  const regex = new RegExp(pattern.sticky.source, pattern.sticky.flags.replace('y', 'g'));
  const found: string[] = [];
  for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
    found.push(`${match.index}:${match.slice(0).join('|')}`);
  }
  return found;
}

const viaFinder = (pattern: WordStartPattern, text: string): string[] =>
  [...new Scan(text, 0).wordStartMatches(pattern)].map((match) => `${match.index}:${match.slice(0).join('|')}`);

const PIECES = [
  ...Object.values(VALID),
  'AB1234567',
  'ab1234567',
  'C01X00T47',
  '12AB34567',
  'ABC123456',
  'X1234567L',
  'x-1234567-l',
  '12.345.678-Z',
  'rssmra85t10a562s',
  'RSSMRA85T10A56',
  '2 85 12 2B 004 001 96',
  '1 85 12 2a 004 001 96',
  'AB 12 34 56 C',
  'ab123456',
  'QQ 12 34 56',
  'sw1a 1aa',
  'EC1A1BB',
  'GIR 0AA',
  'M1 1AE',
  '123456789',
  '1234567890',
  'HTTPXYZKL',
  ' ',
  '  ',
  '-',
  '.',
  '_',
  '\n',
  'a',
  'Z',
  '7',
  'é',
  'ſ',
  '\u212a',
  '٣',
  '\u{1d400}',
];

describe('word-start patterns tried where the shared finder points', () => {
  it.each(PATTERNS)('%s: the matches of a global scan on fixed cases', (_name, pattern) => {
    const text = `${Object.values(VALID).join(' ')} AB1234567_x ${Object.values(VALID).join('_')} ${PIECES.join('')}`;
    expect(viaFinder(pattern, text)).toEqual(globalScan(pattern, text));
  });

  it('every pattern: the matches of a global scan on generated text', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...PIECES), { maxLength: 30 }), (pieces) => {
        const text = pieces.join('');
        for (const [, pattern] of PATTERNS) expect(viaFinder(pattern, text)).toEqual(globalScan(pattern, text));
      }),
      { numRuns: 2000 },
    );
  });

  it('finds values of every kind (the test above compares non-empty results)', () => {
    const text = PIECES.join(' ');
    for (const [name, pattern] of PATTERNS) expect([name, globalScan(pattern, text).length > 0]).toEqual([name, true]);
  });
});
