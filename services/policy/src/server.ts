import { registration } from '@gw/grpc';
import { commonv1, policyv1 } from '@gw/proto';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { Jurisdiction } from '@gw/config';
import type { Catalogue, KeyPermissions } from './catalogue';
import { applyPrivacyMode } from './privacy';
import type { PrivacyMode as PrivacyModeName } from './privacy';

const { Residency, PrivacyMode } = commonv1;

const jurisdictions: Partial<Record<commonv1.Residency, Jurisdiction>> = { [Residency.UK]: 'uk', [Residency.EU]: 'eu' };
const residencyOf: Record<Jurisdiction, commonv1.Residency> = { uk: Residency.UK, eu: Residency.EU };
const privacyModes: Partial<Record<commonv1.PrivacyMode, PrivacyModeName>> = {
  [PrivacyMode.OFF]: 'off',
  [PrivacyMode.FLAG]: 'flag',
  [PrivacyMode.REDACT]: 'redact',
  [PrivacyMode.TOKENISE]: 'tokenise',
};

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
      const decision = catalogue.authorize(permissions.value, request.model);
      if (!decision.ok) return decision;
      const mode = privacyModes[request.key!.privacyMode];
      if (!mode) {
        return err(gatewayError('api_error', 'This API key has no valid privacy mode; the request was not forwarded.'));
      }
      const privacy = applyPrivacyMode(mode, request.bodyJson);
      if (!privacy.ok) return privacy;
      return ok({
        pools: decision.value.map((pool) => ({
          poolId: pool.poolId,
          jurisdiction: residencyOf[pool.jurisdiction],
          region: pool.region,
          upstreamModel: pool.upstreamModel,
        })),
        bodyJson: privacy.value.body,
        privacyFlags: Object.fromEntries(
          Object.entries(privacy.value.flags).map(([type, count]) => [type, BigInt(count ?? 0)]),
        ),
        placeholders: Object.entries(privacy.value.placeholders).map(([placeholder, original]) => ({
          placeholder,
          original,
        })),
        placeholderNonce: privacy.value.nonce,
      });
    },
  });
}
