import { createHash } from 'node:crypto';
import type { GatewayConfig, Jurisdiction } from '@gw/config';

export interface CatalogueModel {
  /** The name callers use. */
  alias: string;
  displayName: string;
  /** ISO 8601, as configured. */
  createdAt: string;
  servedBy: readonly { pool: string; upstreamModel: string }[];
}

export interface CataloguePlan {
  id: string;
  /** "all", or the aliases the plan permits. */
  models: 'all' | readonly string[];
}

export interface CataloguePool {
  id: string;
  region: string;
  jurisdiction: Jurisdiction;
}

/**
 * Everything a model, plan or residency decision reads, as plain data: it survives JSON or protobuf
 * unchanged, so a process without the gateway YAML can decide exactly as policy does.
 */
export interface CatalogueSnapshot {
  models: readonly CatalogueModel[];
  plans: readonly CataloguePlan[];
  pools: readonly CataloguePool[];
}

/** The decision inputs of a gateway configuration; pools of an unknown region are left out (fail closed). */
export function snapshotOfConfig(config: GatewayConfig): CatalogueSnapshot {
  const jurisdictionOf = new Map(config.regions.map((region) => [region.id, region.jurisdiction]));
  return {
    models: config.models.map(({ alias, displayName, createdAt, servedBy }) => ({
      alias,
      displayName,
      createdAt,
      servedBy: servedBy.map(({ pool, upstreamModel }) => ({ pool, upstreamModel })),
    })),
    plans: config.plans.map(({ id, models }) => ({ id, models })),
    pools: config.pools.flatMap((pool) => {
      const jurisdiction = jurisdictionOf.get(pool.region);
      return jurisdiction ? [{ id: pool.id, region: pool.region, jurisdiction }] : [];
    }),
  };
}

/**
 * A hash of the snapshot's content: equal snapshots have equal versions in every process, so a
 * follower can tell a new catalogue from the one it has. Fields are listed in a fixed order because
 * JSON key order follows insertion order.
 */
export function snapshotVersion(snapshot: CatalogueSnapshot): string {
  const canonical = JSON.stringify({
    models: snapshot.models.map((model) => ({
      alias: model.alias,
      displayName: model.displayName,
      createdAt: model.createdAt,
      servedBy: model.servedBy.map((serving) => ({ pool: serving.pool, upstreamModel: serving.upstreamModel })),
    })),
    plans: snapshot.plans.map((plan) => ({ id: plan.id, models: plan.models })),
    pools: snapshot.pools.map((pool) => ({ id: pool.id, region: pool.region, jurisdiction: pool.jurisdiction })),
  });
  return createHash('sha256').update(canonical).digest('hex').slice(0, 32);
}
