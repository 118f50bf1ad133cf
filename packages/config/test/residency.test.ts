import { ConfigError, parseGatewayConfig } from '../src';

/** A configuration with a UK tier of eu-west-2 only and an EU tier, one pool under test, served by model `m`. */
function configWith(pool: string, upstreamModel = 'anthropic.claude-sonnet-4-5-20250929-v1:0', tiers?: string): string {
  return `
regions: [{ id: uk-south, jurisdiction: uk }, { id: eu-west, jurisdiction: eu }]
${
  tiers ??
  `tiers:
  - { id: uk, providerRegions: [eu-west-2] }
  - { id: eu, providerRegions: [eu-west-1, eu-west-3, eu-central-1, europe-west1, europe-west4] }`
}
pools:
  - ${pool}
models:
  - alias: m
    displayName: M
    createdAt: '2025-01-01T00:00:00Z'
    pricing: { inputGbpPerMtok: 1, outputGbpPerMtok: 1 }
    servedBy: [{ pool: p, upstreamModel: "${upstreamModel}" }]
plans:
  - id: plan
    residency: [uk, eu]
    models: all
    limits: { requestsPerMinute: 1, concurrency: 1, monthlyTokens: 1 }
    overage: { enabled: false, gbpPerMtok: 0 }
`;
}

const endpoint = 'endpoints: [{ url: "http://127.0.0.1:1" }]';
const ukBedrock = (regions: string, region = 'eu-west-2') =>
  `{ id: p, region: uk-south, adapter: bedrock, ${endpoint}, bedrock: { region: ${region} }, processingRegions: [${regions}] }`;
const euVertex = (location: string, regions: string) =>
  `{ id: p, region: eu-west, adapter: vertex, ${endpoint}, vertex: { project: demo-project, location: ${location} }, processingRegions: [${regions}] }`;

function refusal(text: string): string {
  try {
    parseGatewayConfig(text, {});
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('residency to the provider region', () => {
  it('accepts a UK Bedrock pool in eu-west-2 and an EU Vertex pool in europe-west4', () => {
    expect(parseGatewayConfig(configWith(ukBedrock('eu-west-2')), {}).pools[0]?.processingRegions).toEqual([
      'eu-west-2',
    ]);
    expect(() =>
      parseGatewayConfig(configWith(euVertex('europe-west4', 'europe-west4'), 'claude-sonnet-4-5'), {}),
    ).not.toThrow();
  });

  it('refuses a region outside the tier, naming it and the allowed ones', () => {
    expect(refusal(configWith(ukBedrock('eu-central-1', 'eu-central-1')))).toBe(
      'invalid gateway configuration: pools.p.processingRegions.0: region eu-central-1 is not allowed in tier uk (allowed: eu-west-2)',
    );
  });

  it('refuses a pool whose processing regions leave out its own region', () => {
    expect(refusal(configWith(ukBedrock('eu-west-2', 'eu-west-1')))).toMatch(
      /must include the pool's own region eu-west-1/,
    );
  });

  it('refuses a regional provider pool that declares no processing regions', () => {
    const pool = `{ id: p, region: uk-south, adapter: bedrock, ${endpoint}, bedrock: { region: eu-west-2 } }`;
    expect(refusal(configWith(pool))).toMatch(/pools\.p\.processingRegions: a bedrock pool must declare every region/);
  });

  it('refuses processing regions when the tier lists no provider regions', () => {
    expect(
      refusal(configWith(ukBedrock('eu-west-2'), undefined, 'tiers: [{ id: eu, providerRegions: [eu-west-1] }]')),
    ).toMatch(/tier uk lists no providerRegions/);
  });

  it('refuses global. profiles always', () => {
    const model = 'global.anthropic.claude-sonnet-4-5-20250929-v1:0';
    expect(refusal(configWith(ukBedrock('eu-west-2'), model))).toMatch(
      /servedBy\.0\.upstreamModel: "global\." profiles may route to any commercial region/,
    );
  });

  it('refuses an eu. profile unless the pool declares every destination, and then unless the tier allows them', () => {
    const model = 'eu.anthropic.claude-sonnet-4-5-20250929-v1:0';
    expect(refusal(configWith(ukBedrock('eu-west-2'), model))).toMatch(
      /"eu\." profiles may route to .*eu-west-2.*; the pool's processingRegions lack eu-central-1/,
    );
    const all = 'eu-central-1, eu-central-2, eu-north-1, eu-south-1, eu-south-2, eu-west-1, eu-west-2, eu-west-3';
    // Declared whole, the profile's regions reach past the UK tier's eu-west-2.
    expect(refusal(configWith(ukBedrock(all), model))).toMatch(/region eu-central-1 is not allowed in tier uk/);
  });

  it('refuses a profile of an unknown geography and an ARN of another region', () => {
    expect(refusal(configWith(ukBedrock('eu-west-2'), 'apac.anthropic.claude-sonnet-4-5-20250929-v1:0'))).toMatch(
      /destination regions of "apac\." profiles are not known/,
    );
    const arn = 'arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-x-v1:0';
    expect(refusal(configWith(ukBedrock('eu-west-2'), arn))).toMatch(
      /the ARN's region eu-west-1 is not the pool's region eu-west-2/,
    );
  });

  it('refuses the Vertex global location always', () => {
    expect(refusal(configWith(euVertex('global', 'europe-west4'), 'claude-sonnet-4-5'))).toMatch(
      /pools\.p\.vertex\.location: the Vertex location "global" may process anywhere/,
    );
  });

  it('refuses the options of another adapter and a credentialEnv on a regional provider', () => {
    const pool = `{ id: p, region: uk-south, adapter: bedrock, ${endpoint}, credentialEnv: KEY, bedrock: { region: eu-west-2 }, processingRegions: [eu-west-2] }`;
    expect(refusal(configWith(pool))).toMatch(/credentialEnv: a bedrock pool takes its credentials/);
    const vertexOnAnthropic = `{ id: p, region: eu-west, adapter: anthropic, ${endpoint}, vertex: { project: demo-project, location: europe-west4 } }`;
    expect(refusal(configWith(vertexOnAnthropic))).toMatch(/"vertex" options are only for a vertex pool/);
  });
});
