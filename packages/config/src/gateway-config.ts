import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { z } from 'zod';
import { residencyTiers } from '@gw/vocabulary';
import { bedrockModelIssue, poolResidencyIssues } from './residency';
import type { ResidencyPool } from './residency';
import { ConfigError } from './env';

const jurisdiction = z.enum(residencyTiers);
const id = z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, 'expected an id of lower-case letters, digits, ".", "_" or "-"');
const positiveInt = z
  .number({ error: 'expected a positive integer' })
  .int('expected a positive integer')
  .positive('expected a positive integer');
const gbp = z
  .number({ error: 'expected an amount in GBP, zero or more' })
  .nonnegative('expected an amount in GBP, zero or more');

const regionSchema = z.strictObject({ id, jurisdiction });

/** A provider's region name: `eu-west-2` (AWS), `europe-west4` (Google). */
const providerRegion = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]*$/, 'expected a provider region such as eu-west-2 or europe-west4');

/** A residency tier's allow-list: the provider regions its pools may process in. */
const tierSchema = z.strictObject({
  id: jurisdiction,
  providerRegions: z.array(providerRegion).min(1, 'expected at least one provider region'),
});

const poolSchema = z.strictObject({
  id,
  region: id,
  adapter: z.enum(['anthropic', 'openai', 'bedrock', 'vertex']),
  endpoints: z
    .array(z.strictObject({ url: z.url({ error: 'expected a URL' }) }))
    .min(1, 'expected at least one endpoint'),
  /** Name of the environment variable that holds the upstream credential; read only by the router. */
  credentialEnv: z.string().optional(),
  /** Options of an `openai` pool's upstream (defaults: text only, bearer credential, usage in streams). */
  openai: z
    .strictObject({
      images: z.boolean().optional(),
      credentialStyle: z.enum(['bearer', 'api-key']).optional(),
      apiVersion: z.string().min(1).optional(),
      streamUsage: z.boolean().optional(),
      chatCompletionsPath: z.string().startsWith('/', 'expected a path starting with /').optional(),
    })
    .optional(),
  /**
   * Every provider region the pool's endpoint may process a request in: its own region, a cross-region
   * profile's destination regions, a multi-region endpoint's regions. Required of `bedrock` and
   * `vertex` pools; each must be in the tier's `providerRegions`.
   */
  processingRegions: z.array(providerRegion).min(1, 'expected at least one provider region').optional(),
  /** Options of a `bedrock` pool: the AWS region signed for (credentials come from the AWS chain). */
  bedrock: z
    .strictObject({
      region: providerRegion,
      /** Beta names passed on as `anthropic_beta`; the adapter's list when unset. */
      supportedBetas: z.array(z.string().min(1)).optional(),
    })
    .optional(),
  /** Options of a `vertex` pool (credentials from Google's application default credentials). */
  vertex: z
    .strictObject({
      project: z.string().regex(/^[a-z][a-z0-9-]{4,28}[a-z0-9]$/, 'expected a Google Cloud project id'),
      location: providerRegion,
      supportedBetas: z.array(z.string().min(1)).optional(),
    })
    .optional(),
});

const modelSchema = z.strictObject({
  alias: z.string().min(1),
  displayName: z.string().min(1),
  createdAt: z.iso.datetime({ offset: true, error: 'expected an ISO 8601 timestamp' }),
  pricing: z.strictObject({ inputGbpPerMtok: gbp, outputGbpPerMtok: gbp }),
  servedBy: z
    .array(z.strictObject({ pool: id, upstreamModel: z.string().min(1) }))
    .min(1, 'expected at least one pool'),
});

const planSchema = z.strictObject({
  id,
  residency: z.array(jurisdiction).min(1, 'expected at least one residency tier'),
  /** "all", or the aliases the plan permits. */
  models: z.union([z.literal('all'), z.array(z.string().min(1))]),
  limits: z.strictObject({
    requestsPerMinute: positiveInt,
    concurrency: positiveInt,
    monthlyTokens: positiveInt,
  }),
  overage: z.strictObject({ enabled: z.boolean(), gbpPerMtok: gbp }),
  /** Tokens at which service stops even with overage; default 2 × the allowance. */
  hardCeilingTokens: positiveInt.optional(),
  bodyLimitBytes: positiveInt.optional(),
});

/** What the residency checks read of the configuration. */
interface ResidencyView {
  regions: z.infer<typeof regionSchema>[];
  tiers?: z.infer<typeof tierSchema>[];
  pools: (ResidencyPool & { id: string; region: string })[];
  models: { servedBy: { pool: string; upstreamModel: string }[] }[];
}

/**
 * Residency to the provider region (see bedrock-regions.ts): a pool of a regional provider declares
 * every region it may process in, and each must be on its tier's allow-list.
 */
function checkResidency(config: ResidencyView, context: z.RefinementCtx): void {
  const tiers = new Map((config.tiers ?? []).map((tier) => [tier.id, tier.providerRegions]));
  const jurisdictions = new Map(config.regions.map((region) => [region.id, region.jurisdiction]));
  const poolsById = new Map(config.pools.map((pool) => [pool.id, pool]));
  config.pools.forEach((pool, index) => {
    const jurisdiction = jurisdictions.get(pool.region);
    // A pool of an unknown region is refused below, by name.
    if (jurisdiction === undefined) return;
    for (const issue of poolResidencyIssues(pool, { id: jurisdiction, providerRegions: tiers.get(jurisdiction) })) {
      context.addIssue({ code: 'custom', path: ['pools', index, ...issue.path], message: issue.message });
    }
  });
  config.models.forEach((model, modelIndex) => {
    model.servedBy.forEach((serving, servingIndex) => {
      const pool = poolsById.get(serving.pool);
      if (pool?.adapter !== 'bedrock') return;
      const message = bedrockModelIssue(serving.upstreamModel, pool.bedrock?.region, pool.processingRegions ?? []);
      if (message !== undefined) {
        context.addIssue({
          code: 'custom',
          path: ['models', modelIndex, 'servedBy', servingIndex, 'upstreamModel'],
          message,
        });
      }
    });
  });
}

export const gatewayConfigSchema = z
  .strictObject({
    regions: z.array(regionSchema).min(1),
    /** Provider regions each residency tier allows; required once a pool declares processing regions. */
    tiers: z.array(tierSchema).optional(),
    pools: z.array(poolSchema).min(1),
    models: z.array(modelSchema).min(1),
    plans: z.array(planSchema).min(1),
  })
  .superRefine((config, context) => {
    // A second entry with the same id would silently shadow the first: refused, naming both.
    const lists = [
      { list: 'regions', what: 'region id', ids: config.regions.map((region) => region.id), field: 'id' },
      { list: 'pools', what: 'pool id', ids: config.pools.map((pool) => pool.id), field: 'id' },
      { list: 'models', what: 'model alias', ids: config.models.map((model) => model.alias), field: 'alias' },
      { list: 'plans', what: 'plan id', ids: config.plans.map((plan) => plan.id), field: 'id' },
    ];
    for (const { list, what, ids, field } of lists) {
      const firstAt = new Map<string, number>();
      ids.forEach((value, index) => {
        const first = firstAt.get(value);
        if (first === undefined) return void firstAt.set(value, index);
        context.addIssue({
          code: 'custom',
          path: [list, index, field],
          message: `duplicate ${what} "${value}": ${list}[${first}] and ${list}[${index}] both use it`,
        });
      });
    }
    checkResidency(config, context);
    const regionIds = new Set(config.regions.map((region) => region.id));
    const poolIds = new Set(config.pools.map((pool) => pool.id));
    const aliases = new Set(config.models.map((model) => model.alias));
    config.pools.forEach((pool, index) => {
      if (!regionIds.has(pool.region)) {
        context.addIssue({
          code: 'custom',
          path: ['pools', index, 'region'],
          message: `unknown region "${pool.region}"`,
        });
      }
    });
    config.models.forEach((model, index) => {
      model.servedBy.forEach((serving, servingIndex) => {
        if (!poolIds.has(serving.pool)) {
          context.addIssue({
            code: 'custom',
            path: ['models', index, 'servedBy', servingIndex, 'pool'],
            message: `unknown pool "${serving.pool}"`,
          });
        }
      });
    });
    config.plans.forEach((plan, index) => {
      if (plan.models === 'all') return;
      plan.models.forEach((alias, aliasIndex) => {
        if (!aliases.has(alias)) {
          context.addIssue({
            code: 'custom',
            path: ['plans', index, 'models', aliasIndex],
            message: `unknown model "${alias}"`,
          });
        }
      });
    });
  });

export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
export type RegionConfig = GatewayConfig['regions'][number];
export type PoolConfig = GatewayConfig['pools'][number];
export type ModelConfig = GatewayConfig['models'][number];
export type PlanConfig = GatewayConfig['plans'][number];
export type Jurisdiction = RegionConfig['jurisdiction'];
export type TierConfig = NonNullable<GatewayConfig['tiers']>[number];

/** Replaces ${NAME} and ${NAME:-fallback} with environment values, so one file serves every stack. */
function interpolate(text: string, env: NodeJS.ProcessEnv): string {
  return text.replace(/\$\{([A-Z0-9_]+)(?::-([^}]*))?\}/g, (whole, name: string, fallback?: string) => {
    const value = env[name] ?? fallback;
    if (value === undefined)
      throw new ConfigError(`invalid gateway configuration: ${whole} is used but ${name} is not set`);
    return value;
  });
}

function describePath(path: PropertyKey[], config: unknown): string {
  // Name list entries by their id where they have one: plans.pro.limits.rpm reads better than plans.1.limits.rpm.
  const parts: string[] = [];
  let node: unknown = config;
  for (const segment of path) {
    const next: unknown = (node as Record<PropertyKey, unknown> | undefined)?.[segment];
    const named = next as { id?: unknown; alias?: unknown } | undefined;
    const name = typeof named?.id === 'string' ? named.id : typeof named?.alias === 'string' ? named.alias : undefined;
    parts.push(typeof segment === 'number' && name !== undefined ? name : String(segment));
    node = next;
  }
  return parts.join('.');
}

export function parseGatewayConfig(text: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  let raw: unknown;
  try {
    raw = parse(interpolate(text, env));
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`invalid gateway configuration: not valid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
  const result = gatewayConfigSchema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw new ConfigError(
    `invalid gateway configuration: ${describePath(issue.path, raw) || '(root)'}: ${issue.message}`,
  );
}

/** A gateway configuration as read from its file: the parsed value and a digest of the text. */
export interface LoadedGatewayConfig {
  config: GatewayConfig;
  /** First 16 hex digits of the SHA-256 of the file's text: which file is in force, for logs and metrics. */
  hash: string;
  /** When this configuration was put in force (ms since the epoch). */
  loadedAtMs: number;
}

export const gatewayConfigHashOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);

export async function readGatewayConfigText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new ConfigError(
      `invalid gateway configuration: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
}

/** Reads and validates the YAML file, once; with the digest a watch of the file starts from. */
export async function readGatewayConfigFile(
  path: string,
  env: NodeJS.ProcessEnv = process.env,
  now: () => number = Date.now,
): Promise<LoadedGatewayConfig> {
  const text = await readGatewayConfigText(path);
  return { config: parseGatewayConfig(text, env), hash: gatewayConfigHashOf(text), loadedAtMs: now() };
}

/** Reads the YAML file once at start. */
export async function loadGatewayConfig(path: string, env: NodeJS.ProcessEnv = process.env): Promise<GatewayConfig> {
  return (await readGatewayConfigFile(path, env)).config;
}
