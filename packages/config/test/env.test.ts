import { z } from 'zod';
import { ConfigError, env, parseGatewayConfig, readEnv } from '../src';

const schema = z.object({ GRPC_PORT: env.port(50051), DATABASE_URL: z.string({ error: 'expected a PostgreSQL URL' }) });

const validYaml = `
regions: [{ id: eu-west, jurisdiction: eu }]
pools: [{ id: p1, region: eu-west, adapter: anthropic, endpoints: [{ url: "\${SIM_URL:-http://127.0.0.1:9101}" }] }]
models:
  - alias: m1
    displayName: M1
    createdAt: '2025-01-01T00:00:00Z'
    pricing: { inputGbpPerMtok: 1, outputGbpPerMtok: 2 }
    servedBy: [{ pool: p1, upstreamModel: m1 }]
plans:
  - id: pro
    residency: [eu]
    models: all
    limits: { requestsPerMinute: 10, concurrency: 2, monthlyTokens: 1000 }
    overage: { enabled: false, gbpPerMtok: 0 }
`;

describe('readEnv', () => {
  it('applies defaults and coerces numbers', () => {
    expect(readEnv(schema, { DATABASE_URL: 'postgres://x' })).toEqual({
      GRPC_PORT: 50051,
      DATABASE_URL: 'postgres://x',
    });
  });

  it('names the variable and the value in one line', () => {
    expect(() => readEnv(schema, { GRPC_PORT: 'abc', DATABASE_URL: 'postgres://x' })).toThrow(
      new ConfigError('invalid configuration: GRPC_PORT: expected a port number (got "abc")'),
    );
    expect(() => readEnv(schema, {})).toThrow(/DATABASE_URL: expected a PostgreSQL URL \(it is not set\)/);
  });
});

describe('parseGatewayConfig', () => {
  it('reads a valid file and fills ${VAR:-default}', () => {
    const config = parseGatewayConfig(validYaml, { SIM_URL: 'http://127.0.0.1:19101' });
    expect(config.pools[0]!.endpoints[0]!.url).toBe('http://127.0.0.1:19101');
    expect(parseGatewayConfig(validYaml, {}).pools[0]!.endpoints[0]!.url).toBe('http://127.0.0.1:9101');
  });

  it('names the path of a typo by the ids of list entries', () => {
    const typo = validYaml.replace('requestsPerMinute: 10', 'requestsPerMinute: -1');
    expect(() => parseGatewayConfig(typo, {})).toThrow(
      'invalid gateway configuration: plans.pro.limits.requestsPerMinute: expected a positive integer',
    );
    const unknownKey = validYaml.replace('concurrency: 2', 'concurency: 2');
    expect(() => parseGatewayConfig(unknownKey, {})).toThrow(/plans\.pro\.limits/);
  });

  it('refuses a model served by an unknown pool', () => {
    expect(() => parseGatewayConfig(validYaml.replace('pool: p1', 'pool: p2'), {})).toThrow(
      /models\.m1\.servedBy\.0\.pool: unknown pool "p2"/,
    );
  });
});
