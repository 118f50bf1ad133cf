import fc from 'fast-check';
import type { GatewayConfig } from '@gw/config';
import { Catalogue } from '../src';
import type { CatalogueSnapshot } from '../src';

const jurisdiction = fc.constantFrom('uk' as const, 'eu' as const);

/** Random but valid configurations: every reference points at something that exists. */
const configuration = fc
  .record({
    regions: fc.uniqueArray(fc.record({ id: fc.constantFrom('r1', 'r2', 'r3', 'r4'), jurisdiction }), {
      minLength: 1,
      maxLength: 4,
      selector: (region) => region.id,
    }),
    poolCount: fc.integer({ min: 1, max: 6 }),
    modelCount: fc.integer({ min: 1, max: 5 }),
    seed: fc.array(fc.nat(), { minLength: 64, maxLength: 64 }),
  })
  .map(({ regions, poolCount, modelCount, seed }): GatewayConfig => {
    const pick = (index: number, length: number) => seed[index % seed.length]! % length;
    const pools = Array.from({ length: poolCount }, (_, index) => ({
      id: `p${index}`,
      region: regions[pick(index, regions.length)]!.id,
      adapter: 'anthropic' as const,
      endpoints: [{ url: `http://127.0.0.1:${9000 + index}` }],
    }));
    const models = Array.from({ length: modelCount }, (_, index) => ({
      alias: `m${index}`,
      displayName: `M${index}`,
      createdAt: `2025-01-0${1 + (index % 9)}T00:00:00Z`,
      pricing: { inputGbpPerMtok: 1, outputGbpPerMtok: 1 },
      servedBy: pools
        .filter((_, poolIndex) => (seed[(index * 7 + poolIndex) % seed.length]! & 1) === 1)
        .map((pool) => ({ pool: pool.id, upstreamModel: `up-${index}` })),
    }));
    return {
      regions,
      pools,
      models,
      plans: [
        {
          id: 'all',
          residency: ['uk', 'eu'],
          models: 'all',
          limits: { requestsPerMinute: 1, concurrency: 1, monthlyTokens: 1 },
          overage: { enabled: false, gbpPerMtok: 0 },
        },
      ],
    };
  });

describe('residency is fail-closed', () => {
  it('never names a pool outside the key jurisdiction, for any configuration, key and model', () => {
    fc.assert(
      fc.property(
        configuration,
        jurisdiction,
        fc.option(fc.array(fc.constantFrom('m0', 'm1', 'm2', 'm3', 'm4')), { nil: null }),
        fc.constantFrom('m0', 'm1', 'm2', 'm3', 'm4', 'unknown'),
        (config, residency, allowedModels, model) => {
          const catalogue = Catalogue.fromConfig(config);
          const key = { plan: 'all', residency, allowedModels };
          const jurisdictionOf = new Map(
            config.pools.map((pool) => [
              pool.id,
              config.regions.find((region) => region.id === pool.region)!.jurisdiction,
            ]),
          );
          const decision = catalogue.authorize(key, model);
          if (decision.ok) {
            expect(decision.value.length).toBeGreaterThan(0);
            for (const pool of decision.value) {
              expect(pool.jurisdiction).toBe(residency);
              expect(jurisdictionOf.get(pool.poolId)).toBe(residency);
            }
          } else {
            expect(['not_found_error', 'permission_error', 'residency_unavailable']).toContain(decision.error.type);
          }
          const listed = catalogue.listModels(key).map((entry) => entry.alias);
          expect(listed.includes(model)).toBe(decision.ok);
          // A process that only has the snapshot, as it travels, decides exactly the same.
          const follower = new Catalogue(JSON.parse(JSON.stringify(catalogue.snapshot)) as CatalogueSnapshot);
          expect(follower.authorize(key, model)).toEqual(decision);
          expect(follower.listModels(key)).toEqual(catalogue.listModels(key));
        },
      ),
      { numRuns: 500 },
    );
  });
});
