import { registration } from '@gw/grpc';
import { commonv1, policyv1 } from '@gw/proto';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { Jurisdiction } from '@gw/config';
import type { Catalogue, KeyPermissions } from './catalogue';

const { Residency, PrivacyMode } = commonv1;

const jurisdictions: Partial<Record<commonv1.Residency, Jurisdiction>> = { [Residency.UK]: 'uk', [Residency.EU]: 'eu' };
const residencyOf: Record<Jurisdiction, commonv1.Residency> = { uk: Residency.UK, eu: Residency.EU };

/** The key's permissions, or a refusal when it has no known residency tier (fail closed). */
function permissionsOf(key: commonv1.KeyContext | undefined): Result<KeyPermissions> {
  const residency = key && jurisdictions[key.residency];
  if (!key || !residency) {
    return err(
      gatewayError('residency_unavailable', 'This API key has no valid residency tier; the request was not routed.'),
    );
  }
  return ok({ plan: key.plan, residency, allowedModels: key.allowedModels?.values ?? null });
}

export function policyService(catalogue: Catalogue) {
  return registration(policyv1.PolicyService, {
    async listModels(request) {
      const permissions = permissionsOf(request.key);
      if (!permissions.ok) return permissions;
      return ok({
        models: catalogue.listModels(permissions.value).map((model) => ({
          id: model.alias,
          displayName: model.displayName,
          createdAtUnixMs: BigInt(model.createdAtUnixMs),
        })),
      });
    },
    async authorize(request) {
      const permissions = permissionsOf(request.key);
      if (!permissions.ok) return permissions;
      // Only `off` exists so far; any other mode refuses rather than sending text unprocessed.
      if (request.key!.privacyMode !== PrivacyMode.OFF) {
        return err(
          gatewayError(
            'api_error',
            'The privacy mode of this API key is not available; the request was not forwarded.',
          ),
        );
      }
      const decision = catalogue.authorize(permissions.value, request.model);
      if (!decision.ok) return decision;
      return ok({
        pools: decision.value.map((pool) => ({
          poolId: pool.poolId,
          jurisdiction: residencyOf[pool.jurisdiction],
          region: pool.region,
          upstreamModel: pool.upstreamModel,
        })),
      });
    },
  });
}
