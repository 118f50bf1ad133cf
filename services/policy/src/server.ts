import { registration } from '@gw/grpc';
import { commonv1, policyv1 } from '@gw/proto';
import { err, gatewayError, ok } from '@gw/errors';
import type { Jurisdiction } from '@gw/config';
import type { Catalogue } from './catalogue';

const { Residency, PrivacyMode } = commonv1;

const jurisdictions: Partial<Record<commonv1.Residency, Jurisdiction>> = { [Residency.UK]: 'uk', [Residency.EU]: 'eu' };
const residencyOf: Record<Jurisdiction, commonv1.Residency> = { uk: Residency.UK, eu: Residency.EU };

export function policyService(catalogue: Catalogue) {
  return registration(policyv1.PolicyService, {
    async authorize(request) {
      const key = request.key;
      const residency = key && jurisdictions[key.residency];
      // Fail closed: a key without a known residency tier is never routed anywhere.
      if (!key || !residency) {
        return err(
          gatewayError(
            'residency_unavailable',
            'This API key has no valid residency tier; the request was not routed.',
          ),
        );
      }
      // Only `off` exists so far; any other mode refuses rather than sending text unprocessed.
      if (key.privacyMode !== PrivacyMode.OFF) {
        return err(
          gatewayError(
            'api_error',
            'The privacy mode of this API key is not available; the request was not forwarded.',
          ),
        );
      }
      const decision = catalogue.authorize(
        { plan: key.plan, residency, allowedModels: key.allowedModels?.values ?? null },
        request.model,
      );
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
