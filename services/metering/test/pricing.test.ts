import { parseGatewayConfig } from '@gw/config';
import { weightedInputTokensExact } from '@gw/vocabulary';
import { costOf, decimalOf, formatGbp, overageTokens, priceEvent, priceList } from '../src/pricing';
import type { PricedEvent } from '../src/pricing';

const config = parseGatewayConfig(`
regions: [{ id: eu-west, jurisdiction: eu }]
pools: [{ id: p, region: eu-west, adapter: anthropic, endpoints: [{ url: 'http://127.0.0.1:1' }] }]
models:
  - alias: sonnet
    displayName: Sonnet
    createdAt: '2025-09-29T00:00:00Z'
    pricing: { inputGbpPerMtok: 2.4, outputGbpPerMtok: 12 }
    servedBy: [{ pool: p, upstreamModel: sonnet }]
  - alias: haiku
    displayName: Haiku
    createdAt: '2025-10-15T00:00:00Z'
    pricing: { inputGbpPerMtok: 0.8, outputGbpPerMtok: 4 }
    servedBy: [{ pool: p, upstreamModel: haiku }]
  - alias: tiny
    displayName: Tiny
    createdAt: '2025-10-15T00:00:00Z'
    pricing: { inputGbpPerMtok: 0.00001, outputGbpPerMtok: 0 }
    servedBy: [{ pool: p, upstreamModel: tiny }]
plans:
  - id: pro
    residency: [eu]
    models: all
    limits: { requestsPerMinute: 600, concurrency: 20, monthlyTokens: 1000 }
    overage: { enabled: true, gbpPerMtok: 9 }
  - id: starter
    residency: [eu]
    models: all
    limits: { requestsPerMinute: 60, concurrency: 5, monthlyTokens: 1000 }
    overage: { enabled: false, gbpPerMtok: 0 }
`);
const prices = priceList(config);

function event(init: Partial<PricedEvent> = {}): PricedEvent {
  return {
    environment: 'live',
    model: 'haiku',
    plan: 'pro',
    inputTokens: 0n,
    outputTokens: 0n,
    cacheReadInputTokens: 0n,
    cacheCreationInputTokens: 0n,
    billableTokens: 0n,
    allowanceTokens: 1000n,
    overageEnabled: false,
    ...init,
  };
}

/** An event whose billable tokens follow the weighting of docs/decisions.md from its counts. */
function weighted(init: Partial<PricedEvent>): PricedEvent {
  const base = event(init);
  return { ...base, billableTokens: weightedInputTokensExact(base) + base.outputTokens };
}

const gbp = (init: Partial<PricedEvent>, before = 0n) => formatGbp(priceEvent(prices, event(init), before).costGbp);

describe('decimalOf', () => {
  it.each([
    [0, 0n, 0],
    [2.4, 24n, 1],
    [0.8, 8n, 1],
    [12, 12n, 0],
    [0.00001, 1n, 5],
    [1.5e-7, 15n, 8],
    [1e21, 10n ** 21n, 0],
  ])('reads %p as the decimal it is written as', (value, units, scale) => {
    expect(decimalOf(value)).toEqual({ units, scale });
  });

  it('refuses what is not a price', () => {
    expect(() => decimalOf(-1)).toThrow(RangeError);
    expect(() => decimalOf(Number.NaN)).toThrow(RangeError);
    expect(() => decimalOf(Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });
});

describe('formatGbp', () => {
  it('writes ten decimals, as numeric(24,10)', () => {
    expect(formatGbp(0n)).toBe('0.0000000000');
    expect(formatGbp(12_000_000n)).toBe('0.0012000000');
    expect(formatGbp(123_4567_890_123n)).toBe('123.4567890123');
    expect(formatGbp(1n)).toBe('0.0000000001');
  });
});

describe('overageTokens', () => {
  it.each([
    ['entirely below the allowance', 100n, 200n, 0n],
    ['ending exactly at the allowance', 800n, 200n, 0n],
    ['crossing the allowance', 900n, 200n, 100n],
    ['starting exactly at the allowance', 1000n, 200n, 200n],
    ['starting above the allowance', 1500n, 200n, 200n],
    ['of no tokens, above the allowance', 1500n, 0n, 0n],
  ])('%s', (_case, before, billable, overage) => {
    expect(overageTokens(before, billable, 1000n)).toBe(overage);
  });
});

describe('costOf', () => {
  it('is exact where floating point is not: 3 tokens at 0.8 GBP/Mtok', () => {
    expect(3 * 0.8).not.toBe(2.4);
    expect(formatGbp(costOf([[3n, decimalOf(0.8)]]))).toBe('0.0000024000');
    expect(formatGbp(costOf([[3_000_000n, decimalOf(0.8)]]))).toBe('2.4000000000');
  });

  it('sums 0.1 + 0.2 GBP exactly', () => {
    expect(0.1 + 0.2).not.toBe(0.3);
    expect(
      formatGbp(
        costOf([
          [1_000_000n, decimalOf(0.1)],
          [1_000_000n, decimalOf(0.2)],
        ]),
      ),
    ).toBe('0.3000000000');
  });

  it('is exact at one token of 4-decimal prices, and rounds finer prices half up once on the total', () => {
    expect(formatGbp(costOf([[1n, decimalOf(0.0001)]]))).toBe('0.0000000001');
    expect(formatGbp(costOf([[4n, decimalOf(0.00001)]]))).toBe('0.0000000000');
    expect(formatGbp(costOf([[5n, decimalOf(0.00001)]]))).toBe('0.0000000001');
    // Two terms of 0.4 units each round to 1 together, never to 0 + 0.
    expect(
      formatGbp(
        costOf([
          [4n, decimalOf(0.00001)],
          [4n, decimalOf(0.00001)],
        ]),
      ),
    ).toBe('0.0000000001');
  });

  it('holds amounts far beyond 2^53', () => {
    expect(formatGbp(costOf([[9_000_000_000_000_000n, decimalOf(60)]]))).toBe('540000000000.0000000000');
  });
});

describe('priceEvent', () => {
  it('prices input and output at the model prices', () => {
    expect(gbp({ model: 'sonnet', inputTokens: 1000n, outputTokens: 500n })).toBe('0.0084000000');
    expect(gbp({ model: 'haiku', inputTokens: 3n })).toBe('0.0000024000');
    expect(gbp({ model: 'haiku', outputTokens: 3n })).toBe('0.0000120000');
  });

  it('prices cache reads at 10 % and cache writes at 125 % of the input price, rounded up in tokens', () => {
    // 1 + ceil(0.1) + ceil(1.25) = 1 + 1 + 2 = 4 input tokens at 0.8
    expect(gbp({ inputTokens: 1n, cacheReadInputTokens: 1n, cacheCreationInputTokens: 1n })).toBe('0.0000032000');
    // ceil(1.5) = 2; ceil(5) = 5
    expect(gbp({ model: 'sonnet', cacheReadInputTokens: 15n, cacheCreationInputTokens: 4n })).toBe('0.0000168000');
  });

  describe('overage', () => {
    const request = weighted({ inputTokens: 150n, outputTokens: 50n, overageEnabled: true });
    // 150 × 0.8 + 50 × 4 = 320 GBP per Mtok of requests: 0.00032 GBP without overage
    it.each([
      ['below the allowance', 500n, 0n, '0.0003200000'],
      ['ending at the allowance', 800n, 0n, '0.0003200000'],
      ['crossing the allowance', 900n, 100n, '0.0012200000'],
      ['at the allowance', 1000n, 200n, '0.0021200000'],
      ['above the allowance', 5000n, 200n, '0.0021200000'],
    ])('%s before the request', (_case, before, overage, cost) => {
      const price = priceEvent(prices, request, before);
      expect(price).toEqual({ costGbp: price.costGbp, overageTokens: overage });
      expect(formatGbp(price.costGbp)).toBe(cost);
    });

    it('is neither counted nor billed when overage is off', () => {
      const price = priceEvent(prices, { ...request, overageEnabled: false, plan: 'starter' }, 5000n);
      expect(price.overageTokens).toBe(0n);
      expect(formatGbp(price.costGbp)).toBe('0.0003200000');
    });

    it('uses the allowance the event carries', () => {
      expect(priceEvent(prices, { ...request, allowanceTokens: 100n }, 0n).overageTokens).toBe(100n);
      expect(priceEvent(prices, { ...request, allowanceTokens: 0n }, 0n).overageTokens).toBe(200n);
    });

    it('counts the billable tokens, cache weights included', () => {
      const cached = weighted({ cacheCreationInputTokens: 4n, overageEnabled: true });
      expect(cached.billableTokens).toBe(5n);
      const price = priceEvent(prices, cached, 1000n);
      expect(price.overageTokens).toBe(5n);
      // 5 × 0.8 + 5 × 9 = 49 GBP per Mtok
      expect(formatGbp(price.costGbp)).toBe('0.0000490000');
    });
  });

  it('costs nothing for test traffic, whatever it says', () => {
    const test = weighted({ environment: 'test', model: 'sonnet', inputTokens: 1000n, overageEnabled: true });
    expect(priceEvent(prices, test, 10_000n)).toEqual({ costGbp: 0n, overageTokens: 0n });
    expect(priceEvent(prices, { ...test, model: 'unknown' }, 0n)).toEqual({ costGbp: 0n, overageTokens: 0n });
  });

  it('prices an unknown model at 0 and says so', () => {
    expect(priceEvent(prices, weighted({ model: 'unknown', inputTokens: 10n }), 0n)).toEqual({
      costGbp: 0n,
      overageTokens: 0n,
      unpriced: 'unknown_model',
    });
  });

  it('prices an unknown plan at 0 when it would price overage, and keeps the overage tokens', () => {
    const request = weighted({ plan: 'enterprise', inputTokens: 10n, overageEnabled: true });
    expect(priceEvent(prices, request, 1000n)).toEqual({ costGbp: 0n, overageTokens: 10n, unpriced: 'unknown_plan' });
    expect(priceEvent(prices, { ...request, plan: null }, 0n).unpriced).toBe('unknown_plan');
  });

  it('needs no plan when overage is off', () => {
    const price = priceEvent(prices, weighted({ plan: null, inputTokens: 10n }), 5000n);
    expect(price).toEqual({ costGbp: 80_000n, overageTokens: 0n });
  });

  it('is exact for a price finer than 4 decimals when the total allows it', () => {
    expect(gbp({ model: 'tiny', inputTokens: 100_000n })).toBe('0.0000010000');
    expect(gbp({ model: 'tiny', inputTokens: 10n })).toBe('0.0000000001');
  });
});
