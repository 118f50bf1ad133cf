import { err, gatewayError, ok, quoted } from '@gw/errors';
import type { RateLimitWindow, Result } from '@gw/errors';
import type { CatalogueFollower } from '../catalogue/catalogue-snapshot';
import type { PolicyClient } from '../clients/policy';
import { modelObject, pageQuery, paginate } from '../domain/models';
import type { ListedModel, ModelObject, ModelPage } from '../domain/models';
import type { QuotaClient } from '../clients/quota';
import type { VerifiedKey } from '../domain/key';
import { authenticate } from './authenticate';
import type { CallerRequest, KeyVerifier, RequestScope } from './types';

/** What the model listings need: the key, a look at its window, and the catalogue or policy. */
export interface ModelsDeps {
  keys: KeyVerifier;
  quota: Pick<QuotaClient, 'peek'>;
  /** The catalogue policy pushed, once it has arrived: listings then need no call. */
  catalogue: Pick<CatalogueFollower, 'modelsFor'>;
  policy: Pick<PolicyClient, 'listModels'>;
}

/**
 * The models the calling key may use inside its tier, newest first. Listing charges nothing, but the
 * answer carries the caller's position in its per-minute window like every authenticated response.
 */
async function permittedModels(
  deps: ModelsDeps,
  request: CallerRequest,
  setRateLimit: (window: RateLimitWindow) => void,
): Promise<Result<ModelObject[]>> {
  const verified = await authenticate(deps.keys, request);
  if (!verified.ok) return verified;
  const key = verified.value;
  const [listed, peeked] = await Promise.all([listedModels(deps, key, request), deps.quota.peek(key, request)]);
  if (peeked.ok) setRateLimit(peeked.value.window);
  return listed.ok ? ok(listed.value.map(modelObject)) : listed;
}

/** From the catalogue policy pushed, or from policy while none has arrived yet. */
function listedModels(deps: ModelsDeps, key: VerifiedKey, scope: RequestScope): Promise<Result<ListedModel[]>> {
  const fromCatalogue = deps.catalogue.modelsFor(key);
  return fromCatalogue ? Promise.resolve(fromCatalogue) : deps.policy.listModels(key, scope);
}

/** GET /v1/models. */
export async function handleListModels(
  deps: ModelsDeps,
  request: CallerRequest,
  query: Record<string, unknown>,
  setRateLimit: (window: RateLimitWindow) => void,
): Promise<Result<ModelPage>> {
  const parsed = pageQuery(query);
  if (!parsed.ok) return parsed;
  const models = await permittedModels(deps, request, setRateLimit);
  return models.ok ? paginate(models.value, parsed.value) : models;
}

/** GET /v1/models/{id}: 404 for a model the key may not use, as for one that does not exist. */
export async function handleGetModel(
  deps: ModelsDeps,
  request: CallerRequest,
  id: string,
  setRateLimit: (window: RateLimitWindow) => void,
): Promise<Result<ModelObject>> {
  const models = await permittedModels(deps, request, setRateLimit);
  if (!models.ok) return models;
  const model = models.value.find((candidate) => candidate.id === id);
  return model
    ? ok(model)
    : err(
        gatewayError(
          'not_found_error',
          `model: ${quoted(id)} is not available to this API key. List the models you can use with GET /v1/models.`,
        ),
      );
}
