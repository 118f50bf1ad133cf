import { detect, ENTITY_TYPES, type EntityType } from '../src';

/**
 * Fuzz for catastrophic backtracking and quadratic scans: every detector (selected by its entity type) runs on
 * adversarial inputs of 25 KB and 100 KB. Where the time is large enough to measure well, growing the input 4×
 * may not grow it more than 10× (quadratic gives 16×; the margin absorbs noise from other processes on the
 * machine). The ratio is the verdict, not a wall-clock budget: a linear scan of 100 KB takes well under a
 * second on a quiet machine but up to about 3 s on a loaded one, while a backtracking regex takes minutes to
 * hours, which the hard bound catches without waiting for it.
 */

const MEASURE_MS = 150;
const HARD_BOUND_MS = 10_000;
const SMALL = 25_000;
const LARGE = 100_000;

function repeat(unit: string, size: number): string {
  return unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
}

/**
 * A value of every type first, so that every detector asks for its context and the sentence ends are found,
 * then `unit` repeated: floods for the sentence scan.
 */
const VALUES =
  'PESEL 44051401359, jane@example.com, 4111 1111 1111 1111, 81.2.69.160, SW1A 1AA, AB123456C, ' +
  'NHS 943 476 5919, born 12/03/1980, passport AB1234567, GB82 WEST 1234 5698 7654 32, 12345678Z ';
function afterValues(unit: string): (size: number) => string {
  return (size) => VALUES + repeat(unit, size - VALUES.length);
}

/** Deterministic pseudo-random text over an alphabet (LCG), so failures reproduce. */
function random(alphabet: string, seed: number): (size: number) => string {
  return (size) => {
    let state = seed;
    let text = '';
    for (let index = 0; index < size; index += 1) {
      state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
      text += alphabet[state % alphabet.length];
    }
    return text;
  };
}

const ADVERSARIAL: Record<string, (size: number) => string> = {
  digits: (size) => repeat('1', size),
  digitsSpaced: (size) => repeat('1 ', size),
  digitsDashed: (size) => repeat('1 - ', size),
  digitsDotted: (size) => repeat('1.', size),
  digitsSlashed: (size) => repeat('12/', size),
  zeroGroups: (size) => repeat('0 1 2 0 3 4 0 5 6 7 ', size),
  trunkGroups: random('0123456789 ', 7),
  plusRuns: (size) => repeat('+4 9 1 2 3 4 5 6 7 8 9 0 ', size),
  doubleZero: (size) => repeat('0049 30 ', size),
  ukPrefix: (size) => repeat('(0)20 ', size),
  atFlood: (size) => repeat('@', size),
  localAt: (size) => repeat('a@', size),
  localFlood: (size) => repeat('a', size - 1) + '@',
  dotsAt: (size) => repeat('a.', size - 12) + '@example.com',
  atDots: (size) => repeat('.@.', size),
  domainLabels: (size) => 'a@' + repeat('b-', size - 2),
  hexColons: (size) => repeat('a:', size),
  doubleColons: (size) => repeat('::', size),
  ipv6ish: (size) => repeat('ffff:1:', size),
  dottedQuads: (size) => repeat('255.', size),
  letterPairs: (size) => repeat('AB', size),
  ninoish: (size) => repeat('AB 12 34 56 ', size),
  postcodeish: (size) => repeat('SW1A ', size),
  ibanStarts: (size) => repeat('GB82 ', size),
  ibanLong: (size) => repeat('GB82WEST', size),
  codiceFiscale: (size) => repeat('RSSMRA85T10A', size),
  nieish: (size) => repeat('X1234567 ', size),
  passportish: (size) => repeat('AB1234567AB', size),
  months: (size) => repeat('March 1 ', size),
  dates: (size) => repeat('12/12/', size),
  dayMonth: (size) => repeat('12 March ', size),
  zeroWidthDigits: (size) => repeat('1\u200b', size),
  fullwidthDigits: (size) => repeat('１ ', size),
  arabicDigits: (size) => repeat('٤ ', size),
  sentenceDots: afterValues('.'),
  sentenceQuotes: afterValues('."'),
  sentenceCloserFlood: (size) => VALUES + '.' + repeat('"', size - VALUES.length - 1),
  sentenceMarks: afterValues('!?…'),
  abbreviations: afterValues('Dr. '),
  dottedLetters: afterValues('e.g. '),
  labelLines: afterValues(' :\n'),
  mixed: random('0123456789 .-/+()@:abcdefABXZ', 11),
  mixedUnicode: random('0١２ \u200b-–.@aА:', 13),
};

/** Best of three runs, in ms (the minimum filters out garbage-collection pauses). */
function timed(text: string, type: EntityType): number {
  let best = Infinity;
  for (let run = 0; run < 3; run += 1) {
    const start = process.hrtime.bigint();
    detect(text, { types: [type] });
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e6);
    if (best > HARD_BOUND_MS) break;
  }
  return best;
}

describe.each(ENTITY_TYPES)('detection of %s runs in linear time', (type) => {
  it('on every adversarial input of 100 KB', () => {
    const slow: string[] = [];
    for (const [name, make] of Object.entries(ADVERSARIAL)) {
      const large = make(LARGE);
      detect(make(1000), { types: [type] }); // warm-up (regex compilation, metadata)
      const largeMs = timed(large, type);
      if (largeMs > HARD_BOUND_MS) slow.push(`${name}: ${largeMs.toFixed(0)} ms for 100 KB`);
      if (largeMs > MEASURE_MS) {
        // Superlinear shows in every round; a machine busy with other work makes one round look so at most.
        let ratio = { smallMs: 0, largeMs, times: Infinity };
        for (let round = 0; round < 3 && ratio.times > 10; round += 1) {
          const smallMs = timed(make(SMALL), type);
          const roundLargeMs = round === 0 ? largeMs : timed(large, type);
          const times = roundLargeMs / Math.max(smallMs, 1);
          if (times < ratio.times) ratio = { smallMs, largeMs: roundLargeMs, times };
        }
        if (ratio.times > 10) {
          slow.push(`${name}: ${ratio.smallMs.toFixed(1)} ms → ${ratio.largeMs.toFixed(1)} ms for 4× the input`);
        }
      }
    }
    expect(slow).toEqual([]);
  }, 120_000);
});

describe('detect (all detectors)', () => {
  it('stays within budget on a mix of every adversarial input (360 KB)', () => {
    const text = Object.values(ADVERSARIAL)
      .map((make) => make(LARGE / 10))
      .join('\n');
    const start = process.hrtime.bigint();
    detect(text);
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    expect(ms).toBeLessThan(HARD_BOUND_MS);
  }, 60_000);
});
