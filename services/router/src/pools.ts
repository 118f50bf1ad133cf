import { createBedrockAdapter } from './adapters/bedrock';
import { bedrockAdapterConfig } from './adapters/bedrock/config';
import { sigV4Signer } from './adapters/bedrock/sign';
import { createOpenAIAdapter, openAIAdapterConfig } from './adapters/openai';
import { createVertexAdapter, vertexAdapterConfig } from './adapters/vertex';
import { bearerSigner } from './adapters/vertex/auth';
import type { RequestSigner, UpstreamAdapter } from './adapters';
import type { ProviderCredentials } from './provider-credentials';
import type { GatewayConfig, Jurisdiction, PoolConfig } from '@gw/config';
import { gatewayError, quoted } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import type { CompletionRequest } from './completion';

/** An upstream pool as the router uses it. */
export interface Pool {
  id: string;
  region: string;
  jurisdiction: Jurisdiction;
  adapter: PoolConfig['adapter'];
  /** Base URLs without a trailing slash, tried in order. */
  endpoints: string[];
  /** Env var holding the upstream credential; undefined when the upstream needs none. */
  credentialEnv: string | undefined;
  /** This pool's own adapter when its YAML sets protocol options; otherwise the registry's. */
  adapterWithOptions?: UpstreamAdapter;
  /** Adds the provider's credentials to each request (Bedrock's SigV4, Vertex's bearer token). */
  signer?: RequestSigner;
}

export type PoolDirectory = ReadonlyMap<string, Pool>;

/** The options the YAML sets, without the unset ones (which keep their defaults). */
function definedOptions<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/** The adapter and signer of a pool that has protocol options or provider credentials. */
function poolProtocol(
  pool: PoolConfig,
  credentials: ProviderCredentials | undefined,
): Pick<Pool, 'adapterWithOptions' | 'signer'> {
  if (pool.adapter === 'openai' && pool.openai)
    return { adapterWithOptions: createOpenAIAdapter({ ...openAIAdapterConfig, ...definedOptions(pool.openai) }) };
  if (pool.adapter === 'bedrock' && pool.bedrock) {
    const betas = pool.bedrock.supportedBetas;
    return {
      adapterWithOptions: betas ? createBedrockAdapter({ ...bedrockAdapterConfig, supportedBetas: betas }) : undefined,
      signer: credentials && sigV4Signer(pool.bedrock.region, credentials.aws),
    };
  }
  if (pool.adapter === 'vertex' && pool.vertex) {
    const { project, location, supportedBetas } = pool.vertex;
    return {
      adapterWithOptions: createVertexAdapter({
        ...vertexAdapterConfig,
        project,
        location,
        ...(supportedBetas ? { supportedBetas } : {}),
      }),
      signer: credentials && bearerSigner(() => credentials.googleAccessToken()),
    };
  }
  return {};
}

/**
 * The pools of a configuration. `credentials`: the regional providers' chains (absent in tests that
 * have no such pools, or that send unsigned requests on purpose).
 */
export function createPoolDirectory(config: GatewayConfig, credentials?: ProviderCredentials): PoolDirectory {
  const jurisdictions = new Map(config.regions.map((region) => [region.id, region.jurisdiction]));
  return new Map(
    config.pools.map((pool) => [
      pool.id,
      {
        id: pool.id,
        region: pool.region,
        // The config schema guarantees every pool's region exists.
        jurisdiction: jurisdictions.get(pool.region)!,
        adapter: pool.adapter,
        endpoints: pool.endpoints.map((endpoint) => endpoint.url.replace(/\/+$/, '')),
        credentialEnv: pool.credentialEnv,
        ...poolProtocol(pool, credentials),
      },
    ]),
  );
}

/**
 * The pools whose credential env var is unset: they cannot serve (every attempt is skipped), which an
 * operator should hear at start and after a reload that adds one, not at the first refused request.
 */
export function poolsWithoutCredential(
  pools: PoolDirectory,
  credential: (envName: string) => string | undefined,
): { pool_id: string; credential_env: string }[] {
  const unset: { pool_id: string; credential_env: string }[] = [];
  for (const pool of pools.values()) {
    if (pool.credentialEnv !== undefined && credential(pool.credentialEnv) === undefined) {
      unset.push({ pool_id: pool.id, credential_env: pool.credentialEnv });
    }
  }
  return unset;
}

/** Puts the pools of a reloaded YAML in force in the directory every part of the router reads. */
export function replacePools(directory: Map<string, Pool>, replacement: PoolDirectory): void {
  directory.clear();
  for (const [id, pool] of replacement) directory.set(id, pool);
}

export interface PlannedPool {
  pool: Pool;
  upstreamModel: string;
}

export type SkipReason = 'unknown_pool' | 'outside_residency' | 'no_upstream_model';

export interface RoutePlan {
  /** The candidates the router will try, in the order given. */
  pools: PlannedPool[];
  /** Candidates left out, for the logs: each is a disagreement with policy that should not happen. */
  skipped: { poolId: string; reason: SkipReason }[];
}

/**
 * The pools to try: the request's candidates, in order, and only those the router's own config puts
 * inside the key's residency tier. Fail-closed: a key without a tier gets none; no other pool is
 * ever added.
 */
export function planRoute(
  request: Pick<CompletionRequest, 'candidates' | 'residency'>,
  directory: PoolDirectory,
): RoutePlan {
  const plan: RoutePlan = { pools: [], skipped: [] };
  for (const candidate of request.candidates) {
    const pool = directory.get(candidate.poolId);
    if (pool === undefined) plan.skipped.push({ poolId: candidate.poolId, reason: 'unknown_pool' });
    else if (pool.jurisdiction !== request.residency)
      plan.skipped.push({ poolId: pool.id, reason: 'outside_residency' });
    else if (candidate.upstreamModel === '') plan.skipped.push({ poolId: pool.id, reason: 'no_upstream_model' });
    else plan.pools.push({ pool, upstreamModel: candidate.upstreamModel });
  }
  return plan;
}

/** The refusal when no candidate is left: residency, unless the router does not know a pool policy chose. */
export function noRouteError(plan: RoutePlan, model: string): GatewayError {
  if (plan.skipped.some((skipped) => skipped.reason === 'unknown_pool')) {
    return gatewayError(
      'api_error',
      'The gateway has no route for this request. Retry once, then contact support quoting the x-request-id header.',
    );
  }
  return gatewayError(
    'residency_unavailable',
    `No upstream inside the key's residency tier can serve model ${quoted(model)}. The request was not sent to any other region.`,
  );
}
