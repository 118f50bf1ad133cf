import { parseGatewayConfig } from '@gw/config';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Catalogue } from '../src/catalogue';

const config = parseGatewayConfig(readFileSync(join(__dirname, '../../../deploy/local/gateway.yaml'), 'utf8'), {});
const catalogue = new Catalogue(config);
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

  it('returns only pools inside the key jurisdiction', () => {
    expect(catalogue.authorize(proEu, 'claude-sonnet-5')).toEqual({
      ok: true,
      value: [{ poolId: 'anthropic-eu-west', jurisdiction: 'eu', region: 'eu-west', upstreamModel: 'claude-sonnet-5' }],
    });
    expect(catalogue.authorize({ ...proEu, residency: 'uk' }, 'claude-sonnet-5')).toEqual({
      ok: true,
      value: [
        { poolId: 'anthropic-uk-south', jurisdiction: 'uk', region: 'uk-south', upstreamModel: 'claude-sonnet-5' },
      ],
    });
  });
});
