import { z } from 'zod';
import { ConfigError, defaultBodyLimitBytes, env, grpcMessageLimitFor, parseGatewayConfig, readEnv } from '../src';

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

describe('gRPC fields', () => {
  const grpc = z.object({ ADDRESS: env.address('127.0.0.1:50052'), GRPC_MAX_MESSAGE_BYTES: env.grpcMaxMessageBytes() });

  it('sizes gRPC messages for the largest request body plus 1 MiB', () => {
    expect(grpcMessageLimitFor(5_000_000)).toBe(5_000_000 + 1_048_576);
    expect(readEnv(grpc, {}).GRPC_MAX_MESSAGE_BYTES).toBe(34_603_008);
    expect(grpcMessageLimitFor(defaultBodyLimitBytes)).toBe(34_603_008);
    expect(readEnv(grpc, { GRPC_MAX_MESSAGE_BYTES: '70000000' }).GRPC_MAX_MESSAGE_BYTES).toBe(70_000_000);
    expect(() => readEnv(grpc, { GRPC_MAX_MESSAGE_BYTES: '0' })).toThrow(/GRPC_MAX_MESSAGE_BYTES/);
  });

  it('takes host:port and dns:///host:port addresses', () => {
    for (const address of ['policy:50052', '10.0.0.7:50052', '[::1]:50052', 'dns:///policy.gw.svc:50052']) {
      expect(readEnv(grpc, { ADDRESS: address }).ADDRESS).toBe(address);
    }
    for (const address of ['policy', 'dns:///policy', 'dns://policy:50052', 'http://policy:50052', 'a b:1']) {
      expect(() => readEnv(grpc, { ADDRESS: address })).toThrow(/ADDRESS: expected host:port or dns:\/\/\/host:port/);
    }
  });
});
