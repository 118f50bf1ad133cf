import fc from 'fast-check';
import { MONTH_DAY_YEAR_AT, monthDayYearMatches } from '../src/detectors/dates';

/**
 * Dates written month first ("March 12, 1980") are found from their day-and-year tail instead of by running the
 * month names over the whole text: the matches must be exactly those of a plain global scan with the same regex.
 */

const reference = new RegExp(MONTH_DAY_YEAR_AT.source, 'giu');

function scan(text: string): string[] {
  const found: string[] = [];
  reference.lastIndex = 0;
  for (let match = reference.exec(text); match !== null; match = reference.exec(text)) {
    found.push(`${match.index}:${match[0]}`);
  }
  return found;
}

const viaTails = (text: string): string[] =>
  [...monthDayYearMatches(text)].map((match) => `${match.index}:${match[0]}`);

const PIECES = [
  'March',
  'march',
  'MARCH',
  'Mar',
  'Sept',
  'sept.',
  'Dec.',
  'März',
  'październik',
  'października',
  'janvier',
  'xMarch',
  '5March',
  'Marchx',
  'Sample',
  'may',
  'mayo',
  'ſept',
  ' ',
  '  ',
  '\n',
  '\t',
  '.',
  ',',
  '1',
  '12',
  '123',
  '3rd',
  '21st',
  '2nd,',
  '1980',
  '2024',
  '19801',
  '٣',
  'é',
  '\u{1d400}',
];

/** Something close to a month-first date: every part may be missing, doubled or wrong. */
const dateLike = fc
  .tuple(
    fc.constantFrom('', 'x', '5', '.', ' ', '('),
    fc.constantFrom('March', 'sept', 'Dec', 'März', 'października', 'mayo', 'Marchx', 'ſept'),
    fc.constantFrom('', '.', '..', ','),
    fc.constantFrom(' ', '  ', '\n', ''),
    fc.constantFrom('1', '12', '123', '٣'),
    fc.constantFrom('', 'st', 'TH', 'x'),
    fc.constantFrom('', ','),
    fc.constantFrom(' ', '', '\t'),
    fc.constantFrom('1980', '198', '19801', '2024.5', '2024'),
  )
  .map((parts) => parts.join(''));

describe('month-first dates found from their tails', () => {
  it('gives the matches of a global scan on fixed cases', () => {
    const cases = [
      'born March 12, 1980 and Sept. 3rd 1999; also dec 1 2000.',
      'xMarch 3 2000, 5march 3 2000, march  3 2000, Marchx 3 2000',
      'März 3 2000 and października 12 1999 and ſept 3 2001',
      'March 3 2000 March 4 2001March 5 2002',
      'a.March 3 2000 (May 1, 1990) "june 30th, 2020"',
      'March 12 19801 and March 12 1980.5',
    ];
    for (const text of cases) expect(viaTails(text)).toEqual(scan(text));
    expect(viaTails(cases[0]!)).toHaveLength(3);
  });

  it('gives the matches of a global scan on generated text', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(dateLike, fc.constantFrom(...PIECES)), { maxLength: 40 }), (pieces) => {
        const text = pieces.join('');
        expect(viaTails(text)).toEqual(scan(text));
      }),
      { numRuns: 3000 },
    );
  });
});
