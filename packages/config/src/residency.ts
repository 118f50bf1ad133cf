/**
 * Residency to the provider region. A tier lists the provider regions it allows; a pool of a regional
 * provider declares every region its endpoint may process in; the configuration is refused unless each
 * declared region is allowed. What a Bedrock model id implies (a cross-region profile's destinations)
 * is checked against the pool's declaration, so that a profile cannot quietly widen it.
 */

/** The fields of a pool the residency checks read. */
export interface ResidencyPool {
  adapter: 'anthropic' | 'openai' | 'bedrock' | 'vertex';
  credentialEnv?: string;
  processingRegions?: string[];
  openai?: object;
  bedrock?: { region: string };
  vertex?: { location: string };
}

export interface ResidencyIssue {
  path: (string | number)[];
  message: string;
}

/**
 * Destination regions of Bedrock's geographic cross-region inference profiles, by id prefix: the widest
 * set the provider documents for the geography (a model's own list may be narrower; docs/regional-providers.md
 * gives the sources). A pool using such a profile must declare all of them.
 */
export const bedrockProfileDestinations: Readonly<Record<string, readonly string[]>> = {
  eu: ['eu-central-1', 'eu-central-2', 'eu-north-1', 'eu-south-1', 'eu-south-2', 'eu-west-1', 'eu-west-2', 'eu-west-3'],
};

/** Profiles that may route anywhere: never inside a residency tier. */
const unboundedProfilePrefixes = ['global'];

/** Vertex locations that are not one region: `global` routes anywhere. */
const unboundedVertexLocations = ['global'];

const list = (regions: readonly string[]) => regions.join(', ');

function adapterOptionIssues(pool: ResidencyPool): ResidencyIssue[] {
  const issues: ResidencyIssue[] = [];
  const own = { bedrock: pool.bedrock, vertex: pool.vertex, openai: pool.openai } as Record<string, unknown>;
  for (const key of ['bedrock', 'vertex', 'openai']) {
    if (own[key] !== undefined && key !== pool.adapter)
      issues.push({ path: [key], message: `"${key}" options are only for a ${key} pool` });
  }
  if (pool.adapter === 'bedrock' || pool.adapter === 'vertex') {
    if (own[pool.adapter] === undefined)
      issues.push({ path: [pool.adapter], message: `a ${pool.adapter} pool needs its "${pool.adapter}" options` });
    if (pool.processingRegions === undefined)
      issues.push({
        path: ['processingRegions'],
        message: `a ${pool.adapter} pool must declare every region it may process in`,
      });
    if (pool.credentialEnv !== undefined)
      issues.push({
        path: ['credentialEnv'],
        message: `a ${pool.adapter} pool takes its credentials from the provider's own chain, not credentialEnv`,
      });
  }
  return issues;
}

/** The pool's own checks and its processing regions against its tier's allow-list. */
export function poolResidencyIssues(
  pool: ResidencyPool,
  tier: { id: string; providerRegions: readonly string[] | undefined },
): ResidencyIssue[] {
  const issues = adapterOptionIssues(pool);
  const declared = pool.processingRegions ?? [];
  if (pool.bedrock !== undefined && pool.processingRegions !== undefined && !declared.includes(pool.bedrock.region)) {
    issues.push({
      path: ['processingRegions'],
      message: `must include the pool's own region ${pool.bedrock.region}`,
    });
  }
  if (pool.vertex !== undefined) {
    if (unboundedVertexLocations.includes(pool.vertex.location))
      issues.push({
        path: ['vertex', 'location'],
        message: `the Vertex location "${pool.vertex.location}" may process anywhere and is never inside a residency tier`,
      });
    else if (pool.processingRegions !== undefined && !declared.includes(pool.vertex.location))
      issues.push({ path: ['processingRegions'], message: `must include the pool's location ${pool.vertex.location}` });
  }
  if (pool.processingRegions === undefined) return issues;
  if (tier.providerRegions === undefined) {
    issues.push({
      path: ['processingRegions'],
      message: `tier ${tier.id} lists no providerRegions: add it to "tiers" with the regions it allows`,
    });
    return issues;
  }
  const allowed = tier.providerRegions;
  declared.forEach((region, index) => {
    if (!allowed.includes(region))
      issues.push({
        path: ['processingRegions', index],
        message: `region ${region} is not allowed in tier ${tier.id} (allowed: ${list(allowed)})`,
      });
  });
  return issues;
}

/** `arn:aws:bedrock:<region>:<account>:<kind>/<id>` */
const bedrockArn = /^arn:aws[a-z-]*:bedrock:([a-z0-9-]+):\d{12}:([a-z-]+)\/(.+)$/;
/** A geographic or global profile id: `eu.anthropic.claude-…`, `global.anthropic.claude-…`. */
const profilePrefix = /^([a-z]{2,6}(?:-[a-z]+)?)\.[a-z0-9-]+\.[^.]/;

/**
 * Why a Bedrock pool may not use this model id, or undefined: a `global.` profile never; a geographic
 * profile only when the pool declares all its documented destinations (an unknown geography never);
 * an ARN only in the pool's own region; an application inference profile's destinations are the
 * pool's declaration, which the operator takes from the profile.
 */
export function bedrockModelIssue(
  modelId: string,
  poolRegion: string | undefined,
  declared: readonly string[],
): string | undefined {
  let id = modelId;
  const arn = bedrockArn.exec(modelId);
  if (arn !== null) {
    const [, arnRegion, kind, resource] = arn as unknown as [string, string, string, string];
    if (poolRegion !== undefined && arnRegion !== poolRegion)
      return `the ARN's region ${arnRegion} is not the pool's region ${poolRegion}`;
    if (kind === 'application-inference-profile') return undefined;
    id = resource;
  }
  const prefix = profilePrefix.exec(id)?.[1];
  if (prefix === undefined) return undefined;
  if (unboundedProfilePrefixes.includes(prefix))
    return `"${prefix}." profiles may route to any commercial region and are never inside a residency tier`;
  const destinations = bedrockProfileDestinations[prefix];
  if (destinations === undefined)
    return `the destination regions of "${prefix}." profiles are not known to the gateway: use an in-region model id`;
  const missing = destinations.filter((region) => !declared.includes(region));
  if (missing.length > 0)
    return `"${prefix}." profiles may route to ${list(destinations)}; the pool's processingRegions lack ${list(missing)}`;
  return undefined;
}
