import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { GatewayConfig, Jurisdiction, ModelConfig, PlanConfig } from '@gw/config';

/** What policy needs to know of the calling key. */
export interface KeyPermissions {
  plan: string;
  residency: Jurisdiction;
  /** null: every model the plan and residency permit. */
  allowedModels: readonly string[] | null;
}

export interface ModelListing {
  alias: string;
  displayName: string;
  createdAtUnixMs: number;
}

export interface CandidatePool {
  poolId: string;
  jurisdiction: Jurisdiction;
  region: string;
  upstreamModel: string;
}

/** The model catalogue and plans, indexed once at start; decisions are pure lookups. */
export class Catalogue {
  private readonly models: Map<string, ModelConfig>;
  private readonly plans: Map<string, PlanConfig>;
  private readonly pools: Map<string, { region: string; jurisdiction: Jurisdiction }>;

  constructor(config: GatewayConfig) {
    const jurisdictionOf = new Map(config.regions.map((region) => [region.id, region.jurisdiction]));
    this.models = new Map(config.models.map((model) => [model.alias, model]));
    this.plans = new Map(config.plans.map((plan) => [plan.id, plan]));
    this.pools = new Map(
      config.pools.map((pool) => [pool.id, { region: pool.region, jurisdiction: jurisdictionOf.get(pool.region)! }]),
    );
  }

  /** The models the key may use inside its jurisdiction: the same rules as authorize, newest first. */
  listModels(key: KeyPermissions): ModelListing[] {
    return [...this.models.values()]
      .filter((model) => this.authorize(key, model.alias).ok)
      .map((model) => ({
        alias: model.alias,
        displayName: model.displayName,
        createdAtUnixMs: Date.parse(model.createdAt),
      }))
      .sort((a, b) => b.createdAtUnixMs - a.createdAtUnixMs || a.alias.localeCompare(b.alias));
  }

  /**
   * In order: unknown model (404), model outside the plan or the key (403), no pool inside the key's
   * jurisdiction (422). Pools outside the jurisdiction are never returned, whatever else holds.
   */
  authorize(key: KeyPermissions, alias: string): Result<CandidatePool[]> {
    const model = this.models.get(alias);
    if (!model) {
      return err(
        gatewayError(
          'not_found_error',
          `model: "${alias}" is not a known model. List the models you can use with GET /v1/models.`,
        ),
      );
    }
    const plan = this.plans.get(key.plan);
    if (!plan || (plan.models !== 'all' && !plan.models.includes(alias))) {
      return err(gatewayError('permission_error', `The model "${alias}" is not included in your plan.`));
    }
    if (key.allowedModels !== null && !key.allowedModels.includes(alias)) {
      return err(gatewayError('permission_error', `This API key is not permitted to use the model "${alias}".`));
    }
    const candidates: CandidatePool[] = [];
    for (const serving of model.servedBy) {
      const pool = this.pools.get(serving.pool);
      if (pool && pool.jurisdiction === key.residency) {
        candidates.push({
          poolId: serving.pool,
          jurisdiction: pool.jurisdiction,
          region: pool.region,
          upstreamModel: serving.upstreamModel,
        });
      }
    }
    if (candidates.length === 0) {
      return err(
        gatewayError(
          'residency_unavailable',
          `No upstream can serve the model "${alias}" inside this key's residency tier (${key.residency}). The request was not sent to any other region.`,
        ),
      );
    }
    return ok(candidates);
  }
}
