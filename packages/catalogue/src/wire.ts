import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { residencyFromProto, residencyToProto } from '@gw/vocabulary/proto';
import { commonv1, create, policyv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import { Catalogue } from './catalogue';
import type { KeyPermissions } from './catalogue';
import type { CataloguePool } from './snapshot';

// The protobuf forms of the catalogue's inputs and answers, kept beside each other so that what policy
// sends and what a follower reads back cannot drift apart.

/** The key's permissions, or a refusal when it has no known residency tier (fail closed). */
export function keyPermissionsOf(key: commonv1.KeyContext | undefined): Result<KeyPermissions> {
  const residency = key && residencyFromProto(key.residency);
  if (!key || !residency) {
    return err(
      gatewayError('residency_unavailable', 'This API key has no valid residency tier; the request was not routed.', {
        reason: 'unspecified',
      }),
    );
  }
  return ok({ plan: key.plan, residency, allowedModels: key.allowedModels?.values ?? null });
}

/**
 * The pools policy.Authorize answers with for a key and model: every decision but the privacy step,
 * which alone needs the body.
 */
export function authorizeKey(
  catalogue: Catalogue,
  key: commonv1.KeyContext | undefined,
  model: string,
): Result<policyv1.CandidatePool[]> {
  const permissions = keyPermissionsOf(key);
  if (!permissions.ok) return permissions;
  const decision = catalogue.authorize(permissions.value, model);
  if (!decision.ok) return decision;
  return ok(
    decision.value.map((pool) =>
      create(policyv1.CandidatePoolSchema, {
        poolId: pool.poolId,
        jurisdiction: residencyToProto(pool.jurisdiction),
        region: pool.region,
        upstreamModel: pool.upstreamModel,
      }),
    ),
  );
}

/** The catalogue as policy sends it to followers. */
export function snapshotMessage(catalogue: Catalogue): MessageInitShape<typeof policyv1.CatalogueSnapshotSchema> {
  const { models, plans, pools } = catalogue.snapshot;
  return {
    version: catalogue.version,
    models: models.map((model) => ({
      alias: model.alias,
      displayName: model.displayName,
      createdAt: model.createdAt,
      servedBy: model.servedBy.map((serving) => ({ poolId: serving.pool, upstreamModel: serving.upstreamModel })),
    })),
    plans: plans.map((plan) =>
      plan.models === 'all' ? { id: plan.id, allModels: true } : { id: plan.id, models: [...plan.models] },
    ),
    pools: pools.map((pool) => ({
      id: pool.id,
      region: pool.region,
      jurisdiction: residencyToProto(pool.jurisdiction),
    })),
  };
}

const unusable = (why: string) => err(gatewayError('api_error', `The catalogue snapshot from policy ${why}.`));

/**
 * The catalogue a snapshot from policy describes, refused whole rather than used in part: a pool without
 * a known jurisdiction, or a content that does not hash to the version policy computed (a field this
 * build does not know would be dropped silently otherwise).
 */
export function catalogueFromMessage(message: policyv1.CatalogueSnapshot | undefined): Result<Catalogue> {
  if (!message) return unusable('is missing');
  const pools: CataloguePool[] = [];
  for (const pool of message.pools) {
    const jurisdiction = residencyFromProto(pool.jurisdiction);
    if (!jurisdiction) return unusable(`names the pool "${pool.id}" without a known jurisdiction`);
    pools.push({ id: pool.id, region: pool.region, jurisdiction });
  }
  const catalogue = new Catalogue({
    models: message.models.map((model) => ({
      alias: model.alias,
      displayName: model.displayName,
      createdAt: model.createdAt,
      servedBy: model.servedBy.map((serving) => ({ pool: serving.poolId, upstreamModel: serving.upstreamModel })),
    })),
    plans: message.plans.map((plan) => ({ id: plan.id, models: plan.allModels ? 'all' : plan.models })),
    pools,
  });
  if (catalogue.version !== message.version) {
    return unusable(`reads back as version ${catalogue.version}, not ${message.version}`);
  }
  return ok(catalogue);
}
