import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Catalogue } from '@gw/catalogue';
import { parseGatewayConfig } from '@gw/config';
import { errorCatalogue } from '@gw/errors';
import { parse } from 'yaml';
import { chartDir } from './helm';

// A cluster serves the residency tiers its gateway YAML has pools in; a key of another tier is refused with the
// catalogued residency error, never routed elsewhere. The chart's default YAML is an EU-only cluster.

const values = parse(readFileSync(join(chartDir, 'values.yaml'), 'utf8')) as { gatewayConfig: string };
const config = parseGatewayConfig(values.gatewayConfig, {});
const catalogue = Catalogue.fromConfig(config);
const models = config.models.map((model) => model.alias);

test('the default gateway YAML serves the EU tier only', () => {
  expect(new Set(config.regions.map((region) => region.jurisdiction))).toEqual(new Set(['eu']));
  for (const plan of config.plans) expect(plan.residency).toEqual(['eu']);
});

test('an EU key is served; a UK key is refused for every model with residency_unavailable (422)', () => {
  for (const alias of models) {
    expect(catalogue.authorize({ plan: 'starter', residency: 'eu', allowedModels: null }, alias).ok).toBe(true);
    const refused = catalogue.authorize({ plan: 'starter', residency: 'uk', allowedModels: null }, alias);
    expect(refused).toEqual({ ok: false, error: expect.objectContaining({ type: 'residency_unavailable' }) });
  }
  expect(errorCatalogue.residency_unavailable.httpStatus).toBe(422);
});
