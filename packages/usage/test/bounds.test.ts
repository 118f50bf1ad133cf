import { billableTokens, boundedCount, boundedUsage, isImplausible, maxTokenCount } from '../src';

describe('the one bound on token counts', () => {
  it('keeps plausible counts, caps implausible ones to 10^12, and makes anything else 0', () => {
    expect(boundedCount(123)).toBe(123);
    expect(boundedCount(maxTokenCount)).toBe(maxTokenCount);
    expect(boundedCount(maxTokenCount + 1)).toBe(maxTokenCount);
    expect(boundedCount(1e300)).toBe(maxTokenCount);
    expect(boundedCount(Infinity)).toBe(maxTokenCount);
    for (const nonsense of [-5, 0, NaN]) expect(boundedCount(nonsense)).toBe(0);
    expect(boundedCount(2.7)).toBe(2);
    expect([isImplausible(maxTokenCount), isImplausible(maxTokenCount + 1)]).toEqual([false, true]);
  });

  it('says when a request had an implausible count, and weights the bounded counts, bounded again', () => {
    const counts = { inputTokens: 10, outputTokens: 2e13, cacheReadInputTokens: 95, cacheCreationInputTokens: 3 };
    expect(boundedUsage(counts)).toEqual({
      counts: { inputTokens: 10, outputTokens: maxTokenCount, cacheReadInputTokens: 95, cacheCreationInputTokens: 3 },
      capped: true,
    });
    expect(billableTokens(counts)).toBe(maxTokenCount);
    // input + output + ceil(10 % of cache reads) + ceil(125 % of cache writes).
    expect(billableTokens({ ...counts, outputTokens: 20 })).toBe(10 + 20 + 10 + 4);
  });
});
