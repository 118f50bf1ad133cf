import { parseGatewayConfig } from '@gw/config';
import { createPoolDirectory, poolsWithoutCredential } from '../src/pools';

const yaml = `
regions: [{ id: eu-west, jurisdiction: eu }]
pools:
  - { id: text-only, region: eu-west, adapter: openai, endpoints: [{ url: "http://127.0.0.1:1" }] }
  - id: vision
    region: eu-west
    adapter: openai
    endpoints: [{ url: "http://127.0.0.1:2" }]
    openai: { images: true, credentialStyle: api-key, apiVersion: "2024-10-21" }
models:
  - alias: m
    displayName: M
    createdAt: '2025-01-01T00:00:00Z'
    pricing: { inputGbpPerMtok: 1, outputGbpPerMtok: 1 }
    servedBy: [{ pool: text-only, upstreamModel: m }, { pool: vision, upstreamModel: m }]
plans:
  - id: p
    residency: [eu]
    models: all
    limits: { requestsPerMinute: 1, concurrency: 1, monthlyTokens: 1 }
    overage: { enabled: false, gbpPerMtok: 0 }
`;

const withImage = {
  model: 'm',
  max_tokens: 8,
  messages: [
    {
      role: 'user',
      content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }],
    },
  ],
};

describe('per-pool protocol options from the YAML', () => {
  const pools = createPoolDirectory(parseGatewayConfig(yaml, {}));

  it('gives a pool with openai options its own adapter, and leaves the others on the defaults', () => {
    expect(pools.get('text-only')!.adapterWithOptions).toBeUndefined();
    const vision = pools.get('vision')!.adapterWithOptions!;
    expect(vision.checkRequest?.({ body: withImage, stream: false })).toEqual({ ok: true, value: undefined });
    const request = vision.buildRequest({
      endpointUrl: 'http://127.0.0.1:2',
      upstreamModel: 'm',
      body: withImage,
      rawBody: Buffer.from(JSON.stringify(withImage)),
      stream: false,
      headers: {},
      query: '',
      credential: 'secret',
      requestId: 'req_1',
    });
    expect(request.url).toContain('api-version=2024-10-21');
    expect(request.headers['api-key']).toBe('secret');
  });

  it('refuses the option block on a typo', () => {
    expect(() => parseGatewayConfig(yaml.replace('images: true', 'imagez: true'), {})).toThrow(/pools\.vision\.openai/);
  });
});

describe('poolsWithoutCredential', () => {
  const withCredentials = yaml
    .replace('adapter: openai, endpoints', 'adapter: openai, credentialEnv: TEXT_KEY, endpoints')
    .replace('    adapter: openai\n    endpoints', '    adapter: openai\n    credentialEnv: VISION_KEY\n    endpoints');
  const pools = createPoolDirectory(parseGatewayConfig(withCredentials, {}));

  it('names each pool whose credential env var is unset or empty, and no other', () => {
    const env: Record<string, string> = { TEXT_KEY: 'secret' };
    expect(poolsWithoutCredential(pools, (name) => env[name] || undefined)).toEqual([
      { pool_id: 'vision', credential_env: 'VISION_KEY' },
    ]);
    env.VISION_KEY = 'secret';
    expect(poolsWithoutCredential(pools, (name) => env[name] || undefined)).toEqual([]);
  });

  it('leaves out a pool that needs no credential', () => {
    expect(poolsWithoutCredential(createPoolDirectory(parseGatewayConfig(yaml, {})), () => undefined)).toEqual([]);
  });
});
