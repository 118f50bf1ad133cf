import { commonv1 } from '@gw/proto';
import {
  billingPeriodOf,
  billingPeriodStartingOn,
  expectedOneOf,
  keyEnvironments,
  privacyModes,
  residencyTiers,
  weightedInputTokens,
  weightedInputTokensExact,
} from '@gw/vocabulary';
import {
  environmentFromProto,
  environmentToProto,
  privacyModeFromProto,
  privacyModeToProto,
  residencyFromProto,
  residencyToProto,
} from '@gw/vocabulary/proto';
import fc from 'fast-check';

/** Every value of a proto enum but UNSPECIFIED (0). */
const specifiedValues = (enumObject: object) =>
  Object.values(enumObject).filter((value): value is number => typeof value === 'number' && value !== 0);

describe('codecs to and from the proto enums', () => {
  it('map every word to a distinct specified enum value and back', () => {
    for (const tier of residencyTiers) expect(residencyFromProto(residencyToProto(tier))).toBe(tier);
    for (const mode of privacyModes) expect(privacyModeFromProto(privacyModeToProto(mode))).toBe(mode);
    for (const environment of keyEnvironments) {
      expect(environmentFromProto(environmentToProto(environment))).toBe(environment);
    }
  });

  it('cover every specified value of each enum, so that a value added to the proto must be named here', () => {
    expect(new Set(residencyTiers.map(residencyToProto))).toEqual(new Set(specifiedValues(commonv1.Residency)));
    expect(new Set(privacyModes.map(privacyModeToProto))).toEqual(new Set(specifiedValues(commonv1.PrivacyMode)));
    expect(new Set(keyEnvironments.map(environmentToProto))).toEqual(new Set(specifiedValues(commonv1.Environment)));
  });

  it('decode UNSPECIFIED and unknown numbers as nothing', () => {
    expect(residencyFromProto(commonv1.Residency.UNSPECIFIED)).toBeUndefined();
    expect(privacyModeFromProto(99 as commonv1.PrivacyMode)).toBeUndefined();
    expect(environmentFromProto(commonv1.Environment.UNSPECIFIED)).toBeUndefined();
  });
});

describe('billing period', () => {
  it('is the calendar month in UTC, whatever the time of day', () => {
    const period = billingPeriodOf(new Date('2026-12-31T23:59:59.999Z'));
    expect(period.start.toISOString()).toBe('2026-12-01T00:00:00.000Z');
    expect(period.end.toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(period.startDay).toBe('2026-12-01');
    expect(period.month).toBe('2026-12');
    expect(billingPeriodOf(new Date('2027-01-01T00:00:00.000Z')).startDay).toBe('2027-01-01');
  });

  it('follows UTC, not the offset the instant was written with', () => {
    // 20:30 on 31 January in New York is already February in UTC.
    expect(billingPeriodOf(new Date('2026-01-31T20:30:00-05:00')).startDay).toBe('2026-02-01');
    expect(billingPeriodOf(new Date('2026-02-01T00:30:00+01:00')).startDay).toBe('2026-01-01');
  });

  it('holds the instant, and starting on its first day gives it back', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('2000-01-01'), max: new Date('9999-11-30'), noInvalidDate: true }), (at) => {
        const period = billingPeriodOf(at);
        expect(period.start.getTime()).toBeLessThanOrEqual(at.getTime());
        expect(at.getTime()).toBeLessThan(period.end.getTime());
        expect(billingPeriodStartingOn(period.startDay)).toEqual(period);
      }),
    );
  });

  it('refuses a day that does not start a month', () => {
    expect(billingPeriodStartingOn('0042-03-01')?.start.toISOString()).toBe('0042-03-01T00:00:00.000Z');
    for (const text of ['2026-11-02', '2026-13-01', '2026-00-01', '2026-1-01', '0000-01-01', 'November']) {
      expect(billingPeriodStartingOn(text)).toBeUndefined();
    }
  });
});

describe('cache-token weighting', () => {
  it('counts reads at 10 % and writes at 125 %, each rounded up', () => {
    expect(weightedInputTokens({ inputTokens: 100, cacheReadInputTokens: 11, cacheCreationInputTokens: 5 })).toBe(
      100 + 2 + 7,
    );
  });

  it.each([
    [100n, 0n, 0n, 100n],
    [0n, 10n, 0n, 1n],
    [0n, 11n, 0n, 2n],
    [0n, 1n, 0n, 1n],
    [0n, 0n, 4n, 5n],
    [0n, 0n, 1n, 2n],
    [0n, 0n, 5n, 7n],
    [7n, 15n, 3n, 7n + 2n + 4n],
  ])(
    'weights %d input, %d cache reads (10 %%) and %d cache writes (125 %%), rounded up, as %d',
    (input, reads, writes, weighted) => {
      expect(
        weightedInputTokensExact({ inputTokens: input, cacheReadInputTokens: reads, cacheCreationInputTokens: writes }),
      ).toBe(weighted);
    },
  );

  it('gives the same count in numbers and in exact integers', () => {
    const count = fc.integer({ min: 0, max: 10 ** 12 });
    fc.assert(
      fc.property(count, count, count, (input, reads, writes) => {
        const exact = weightedInputTokensExact({
          inputTokens: BigInt(input),
          cacheReadInputTokens: BigInt(reads),
          cacheCreationInputTokens: BigInt(writes),
        });
        const inexact = weightedInputTokens({
          inputTokens: input,
          cacheReadInputTokens: reads,
          cacheCreationInputTokens: writes,
        });
        expect(BigInt(inexact)).toBe(exact);
      }),
    );
  });
});

it('names the words a field accepts', () => {
  expect(expectedOneOf(keyEnvironments)).toBe('"live" or "test"');
  expect(expectedOneOf(privacyModes)).toBe('"off", "flag", "redact" or "tokenise"');
  expect(expectedOneOf(keyEnvironments, { quoted: false })).toBe('live or test');
});
