import { parseGatewayConfig } from '@gw/config';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Catalogue, snapshotOfConfig } from '../src';
import type { CatalogueSnapshot } from '../src';

const config = parseGatewayConfig(readFileSync(join(__dirname, '../../../deploy/local/gateway.yaml'), 'utf8'), {});
const catalogue = Catalogue.fromConfig(config);
const proEu = { plan: 'pro', residency: 'eu' as const, allowedModels: null };

describe('Catalogue.authorize', () => {
  it('refuses an unknown model with not_found_error pointing at the listing', () => {
    const decision = catalogue.authorize(proEu, 'gpt-nothing');
    expect(decision).toEqual({ ok: false, error: expect.objectContaining({ type: 'not_found_error' }) });
    expect(!decision.ok && decision.error.message).toMatch(/GET \/v1\/models/);
  });

  it('refuses a model outside the plan, then outside the key', () => {
    expect(catalogue.authorize({ ...proEu, plan: 'starter' }, 'claude-opus-5')).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'permission_error', message: expect.stringMatching(/plan/) }),
    });
    expect(catalogue.authorize({ ...proEu, allowedModels: ['claude-haiku-4-5'] }, 'claude-sonnet-5')).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'permission_error', message: expect.stringMatching(/API key/) }),
    });
  });

  it('refuses with residency_unavailable when no pool inside the tier serves the model', () => {
    expect(catalogue.authorize(proEu, 'claude-opus-5')).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'residency_unavailable' }),
    });
    expect(catalogue.authorize({ ...proEu, residency: 'uk' }, 'claude-haiku-4-5')).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'residency_unavailable' }),
    });
  });

  it('returns only pools inside the key jurisdiction, in the order the model lists them', () => {
    const bedrockModel = 'anthropic.claude-sonnet-5-20250929-v1:0';
    expect(catalogue.authorize(proEu, 'claude-sonnet-5')).toEqual({
      ok: true,
      value: [
        { poolId: 'bedrock-eu-ireland', jurisdiction: 'eu', region: 'eu-west', upstreamModel: bedrockModel },
        {
          poolId: 'vertex-eu-netherlands',
          jurisdiction: 'eu',
          region: 'eu-west',
          upstreamModel: 'claude-sonnet-5@20250929',
        },
        { poolId: 'anthropic-eu-west', jurisdiction: 'eu', region: 'eu-west', upstreamModel: 'claude-sonnet-5' },
      ],
    });
    expect(catalogue.authorize({ ...proEu, residency: 'uk' }, 'claude-sonnet-5')).toEqual({
      ok: true,
      value: [
        { poolId: 'bedrock-uk-london', jurisdiction: 'uk', region: 'uk-south', upstreamModel: bedrockModel },
        { poolId: 'anthropic-uk-south', jurisdiction: 'uk', region: 'uk-south', upstreamModel: 'claude-sonnet-5' },
      ],
    });
  });
});

describe('Catalogue from a snapshot', () => {
  it('decides and lists as the configuration it came from, after a trip through JSON', () => {
    const copy = new Catalogue(JSON.parse(JSON.stringify(catalogue.snapshot)) as CatalogueSnapshot);
    expect(copy.version).toBe(catalogue.version);
    for (const key of [proEu, { ...proEu, residency: 'uk' as const }, { ...proEu, plan: 'starter' }]) {
      expect(copy.listModels(key)).toEqual(catalogue.listModels(key));
      for (const alias of ['claude-sonnet-5', 'claude-opus-5', 'claude-haiku-4-5', 'gpt-nothing']) {
        expect(copy.authorize(key, alias)).toEqual(catalogue.authorize(key, alias));
      }
    }
  });

  it('has a new version when any decision input changes, and the same one when nothing does', () => {
    const { snapshot } = catalogue;
    expect(new Catalogue({ ...snapshot }).version).toBe(catalogue.version);
    const changed: CatalogueSnapshot[] = [
      { ...snapshot, plans: snapshot.plans.map((plan) => ({ ...plan, models: ['claude-sonnet-5'] })) },
      { ...snapshot, pools: snapshot.pools.map((pool) => ({ ...pool, jurisdiction: 'uk' as const })) },
      { ...snapshot, models: snapshot.models.map((model) => ({ ...model, displayName: `${model.displayName}!` })) },
    ];
    for (const other of changed) expect(new Catalogue(other).version).not.toBe(catalogue.version);
  });

  it('leaves out a pool whose region has no jurisdiction', () => {
    const orphan = { ...config, pools: [...config.pools, { ...config.pools[0]!, id: 'orphan', region: 'nowhere' }] };
    expect(snapshotOfConfig(orphan).pools.map((pool) => pool.id)).not.toContain('orphan');
  });
});
