import fc from 'fast-check';
import { createNonce, createRestorer, detect, restoreAll, tokenise, type TokenMap } from '../src';
import { fours, iban, luhnComplete, testNhsNumbers, VALID } from './fixtures';

const ZW = '\u200b';
const fullwidth = (text: string): string =>
  text.replace(/[0-9A-Za-z@.]/g, (character) => String.fromCodePoint(character.codePointAt(0)! + 0xfee0));

/** Personal data as people (and evaders) write it. */
const PII_VALUES: readonly string[] = [
  ...Object.values(VALID),
  ...testNhsNumbers(3),
  fours(iban('ES', '21000418450200051332')),
  luhnComplete('555555555555444'),
  `jane${ZW}.doe@example${ZW}.com`,
  fullwidth('4111 1111 1111 1111'),
  'JOHN@EXAMPLE.COM',
  'josé@exämple.de',
  '0 2 0 7 9 4 6 0 9 5 8',
  '+44 (0)20 7946 0958',
  'АВ123456С',
  'ＳＷ１Ａ １ＡＡ',
];
const LABELS = [
  'NHS number ',
  'card ',
  'IBAN: ',
  'call ',
  'DOB ',
  'born ',
  'passport ',
  'PESEL ',
  'BSN ',
  'Steuer-ID ',
];
const NOISE = [
  ' ',
  ', ',
  '.\n',
  '[',
  '[[',
  ']]',
  '[[PII:',
  '[[PII:EMAIL:1:',
  '[[PII:EMAIL:1:someoneelse]]',
  '[EMAIL_1]',
  '😀',
  ZW,
  '"quoted\\"',
  'order ',
  '12/03/1980',
];

const segment = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...PII_VALUES) },
  { weight: 2, arbitrary: fc.constantFrom(...LABELS) },
  { weight: 2, arbitrary: fc.constantFrom(...NOISE) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
);
const text = fc.array(segment, { maxLength: 10 }).map((segments) => segments.join(''));
const texts = fc.array(text, { minLength: 1, maxLength: 3 });

/** Streams `source` through a fresh restorer cut at `cuts`; checks that no released piece shows the nonce. */
function stream(
  source: string,
  cuts: readonly number[],
  map: TokenMap,
  nonce: string,
  json = false,
  leakCheck = true,
): string {
  const restorer = createRestorer(map, nonce, { json });
  let output = '';
  let from = 0;
  const release = (piece: string): void => {
    if (leakCheck) expect(piece.includes(nonce)).toBe(false);
    output += piece;
  };
  for (const cut of cuts) {
    release(restorer.push(source.slice(from, cut)));
    from = cut;
  }
  release(restorer.push(source.slice(from)));
  release(restorer.flush());
  return output;
}

describe('tokenise → echo → restore', () => {
  it('gives back the original text exactly, for a stream cut at every split position', () => {
    let withEntities = 0;
    fc.assert(
      fc.property(texts, (originals) => {
        const nonce = createNonce();
        const { texts: tokenised, map } = tokenise(originals, nonce);
        if (Object.keys(map).length > 0) withEntities += 1;
        tokenised.forEach((echo, index) => {
          const original = originals[index]!;
          expect(restoreAll(echo, map, nonce)).toBe(original);
          for (let cut = 0; cut <= echo.length; cut += 1) expect(stream(echo, [cut], map, nonce)).toBe(original);
        });
      }),
      { numRuns: 150 },
    );
    // The generator really embeds personal data (most runs tokenise something).
    expect(withEntities).toBeGreaterThan(75);
  }, 60_000);

  it('gives back the original text exactly, for random multi-split chunkings', () => {
    fc.assert(
      fc.property(
        texts.chain((originals) =>
          fc.tuple(
            fc.constant(originals),
            fc.array(fc.array(fc.nat(), { maxLength: 40 }), { minLength: 1, maxLength: 5 }),
          ),
        ),
        ([originals, chunkings]) => {
          const nonce = createNonce();
          const { texts: tokenised, map } = tokenise(originals, nonce);
          const echo = tokenised.join('\n');
          for (const raw of chunkings) {
            const cuts = raw.map((cut) => cut % (echo.length + 1)).sort((a, b) => a - b);
            expect(stream(echo, cuts, map, nonce)).toBe(originals.join('\n'));
          }
        },
      ),
      { numRuns: 200 },
    );
  }, 60_000);

  it('JSON variant: restores into a JSON string value (partial_json), valid and exact at every split', () => {
    fc.assert(
      fc.property(text, (original) => {
        const nonce = createNonce();
        const { texts: tokenised, map } = tokenise([original], nonce);
        const source = JSON.stringify({ query: tokenised[0], n: 1 });
        const expected = JSON.stringify({ query: original, n: 1 });
        for (let cut = 0; cut <= source.length; cut += 1) {
          expect(stream(source, [cut], map, nonce, true)).toBe(expected);
        }
        const cuts = [...new Set([3, 7, 11, 13, 29].map((step) => step % (source.length + 1)))].sort((a, b) => a - b);
        const restored = stream(source, cuts, map, nonce, true);
        expect((JSON.parse(restored) as { query: string }).query).toBe(original);
      }),
      { numRuns: 150 },
    );
  }, 60_000);

  it('a reply mixing model text and placeholders restores only the placeholders of this request', () => {
    fc.assert(
      fc.property(texts, fc.string({ maxLength: 20 }), fc.nat(), (originals, chatter, seed) => {
        const nonce = createNonce();
        const { texts: tokenised, map } = tokenise(originals, nonce);
        // A placeholder the model invented (unknown number) stays as it is.
        const invented = `[[PII:EMAIL:99:${nonce}]]`;
        const reply = `${chatter}${tokenised.join(chatter)}${invented}`;
        const cuts = [seed % (reply.length + 1)];
        expect(stream(reply, cuts, map, nonce, false, false)).toBe(`${chatter}${originals.join(chatter)}${invented}`);
      }),
      { numRuns: 100 },
    );
  });
});

describe('detect on arbitrary text', () => {
  it('returns sorted, non-overlapping spans on code-point boundaries', () => {
    fc.assert(
      fc.property(text, (value) => {
        const entities = detect(value);
        let previousEnd = 0;
        for (const entity of entities) {
          expect(entity.start).toBeGreaterThanOrEqual(previousEnd);
          expect(entity.end).toBeGreaterThan(entity.start);
          expect(entity.end).toBeLessThanOrEqual(value.length);
          const low = (index: number): boolean => {
            const unit = value.charCodeAt(index);
            return unit >= 0xdc00 && unit <= 0xdfff && index > 0 && value.charCodeAt(index - 1) >= 0xd800;
          };
          expect(low(entity.start)).toBe(false);
          if (entity.end < value.length) expect(low(entity.end)).toBe(false);
          previousEnd = entity.end;
        }
      }),
      { numRuns: 300 },
    );
  });
});
