import fc from 'fast-check';
import { randomBase62 } from '../src';

const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

describe('randomBase62 (key secrets)', () => {
  it('always gives the requested number of base62 characters', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 256 }), (length) => {
        const secret = randomBase62(length);
        return secret.length === length && /^[A-Za-z0-9]+$/.test(secret);
      }),
      { numRuns: 500 },
    );
  });

  it('has no collision in 100,000 secrets of 32 characters', () => {
    const seen = new Set<string>();
    for (let index = 0; index < 100_000; index += 1) seen.add(randomBase62(32));
    expect(seen.size).toBe(100_000);
  });

  it('spreads characters evenly: chi-square over 62 symbols passes at the 1e-9 level', () => {
    const counts = new Map<string, number>(Array.from(alphabet, (character) => [character, 0]));
    const samples = 20_000;
    for (let index = 0; index < samples; index += 1) {
      for (const character of randomBase62(32)) counts.set(character, counts.get(character)! + 1);
    }
    const expected = (samples * 32) / 62;
    const chiSquare = [...counts.values()].reduce((sum, observed) => sum + (observed - expected) ** 2 / expected, 0);
    // 61 degrees of freedom: P(χ² > 153) ≈ 1e-9, so the test does not flake; a modulo bias (byte % 62)
    // would give χ² ≈ 4,200 with these counts.
    expect(chiSquare).toBeLessThan(153);
  });
});
