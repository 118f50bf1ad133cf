import { registration } from '@gw/grpc';
import { policyv1 } from '@gw/proto';
import { err, gatewayError, ok } from '@gw/errors';
import { authorizeKey, keyPermissionsOf, snapshotMessage } from '@gw/catalogue';
import type { Catalogue } from '@gw/catalogue';
import type { CurrentValue } from './current-value';
import { privacyModeFromProto } from '@gw/vocabulary/proto';
import type { PrivacyStep } from './privacy-step';

/**
 * Every call reads the catalogue in force when it arrives; a reload replaces it. The privacy step runs large
 * bodies off this thread, so that one account's body never holds up other calls.
 */
export function policyService(catalogues: CurrentValue<Catalogue>, applyPrivacyMode: PrivacyStep) {
  return registration(policyv1.PolicyService, {
    async listModels(request) {
      const permissions = keyPermissionsOf(request.key);
      if (!permissions.ok) return permissions;
      return ok({
        models: catalogues
          .get()
          .listModels(permissions.value)
          .map((model) => ({
            id: model.alias,
            displayName: model.displayName,
            createdAtUnixMs: BigInt(model.createdAtUnixMs),
          })),
      });
    },
    async authorize(request, context) {
      const pools = authorizeKey(catalogues.get(), request.key, request.model);
      if (!pools.ok) return pools;
      const mode = privacyModeFromProto(request.key!.privacyMode);
      if (!mode) {
        return err(gatewayError('api_error', 'This API key has no valid privacy mode; the request was not forwarded.'));
      }
      const privacy = await applyPrivacyMode(request.key!.accountId, mode, request.bodyJson, context.signal);
      if (!privacy.ok) return privacy;
      return ok({
        pools: pools.value,
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
    async *watchCatalogue(_request, context) {
      for await (const catalogue of catalogues.subscribe(context.signal)) {
        yield ok({ snapshot: snapshotMessage(catalogue) });
      }
    },
  });
}
