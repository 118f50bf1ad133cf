import { err, gatewayError, ok, quoted } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { GatewayConfig, Jurisdiction } from '@gw/config';
import { snapshotOfConfig, snapshotVersion } from './snapshot';
import type { CatalogueModel, CataloguePlan, CataloguePool, CatalogueSnapshot } from './snapshot';

/** What a decision needs to know of the calling key. */
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

/** The model catalogue and plans, indexed once; decisions are pure lookups. */
export class Catalogue {
  /** A hash of the content: equal catalogues have equal versions in every process. */
  readonly version: string;
  private readonly models: Map<string, { model: CatalogueModel; createdAtUnixMs: number }>;
  private readonly plans: Map<string, CataloguePlan>;
  private readonly pools: Map<string, CataloguePool>;

  constructor(readonly snapshot: CatalogueSnapshot) {
    this.version = snapshotVersion(snapshot);
    this.models = new Map(
      snapshot.models.map((model) => [model.alias, { model, createdAtUnixMs: Date.parse(model.createdAt) }]),
    );
    this.plans = new Map(snapshot.plans.map((plan) => [plan.id, plan]));
    this.pools = new Map(snapshot.pools.map((pool) => [pool.id, pool]));
  }

  static fromConfig(config: GatewayConfig): Catalogue {
    return new Catalogue(snapshotOfConfig(config));
  }

  /** The models the key may use inside its jurisdiction: the same rules as authorize, newest first. */
  listModels(key: KeyPermissions): ModelListing[] {
    return [...this.models.values()]
      .filter(({ model }) => this.authorize(key, model.alias).ok)
      .map(({ model, createdAtUnixMs }) => ({ alias: model.alias, displayName: model.displayName, createdAtUnixMs }))
      .sort((a, b) => b.createdAtUnixMs - a.createdAtUnixMs || a.alias.localeCompare(b.alias));
  }

  /**
   * In order: unknown model (404), model outside the plan or the key (403), no pool inside the key's
   * jurisdiction (422). Pools outside the jurisdiction are never returned, whatever else holds.
   */
  authorize(key: KeyPermissions, alias: string): Result<CandidatePool[]> {
    const model = this.models.get(alias)?.model;
    if (!model) {
      return err(
        gatewayError(
          'not_found_error',
          `model: ${quoted(alias)} is not a known model. List the models you can use with GET /v1/models.`,
        ),
      );
    }
    const plan = this.plans.get(key.plan);
    if (!plan || (plan.models !== 'all' && !plan.models.includes(alias))) {
      return err(gatewayError('permission_error', `The model ${quoted(alias)} is not included in your plan.`));
    }
    if (key.allowedModels !== null && !key.allowedModels.includes(alias)) {
      return err(gatewayError('permission_error', `This API key is not permitted to use the model ${quoted(alias)}.`));
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
          `No upstream can serve the model ${quoted(alias)} inside this key's residency tier (${key.residency}). The request was not sent to any other region.`,
          { reason: key.residency },
        ),
      );
    }
    return ok(candidates);
  }
}
