import { err, gatewayError, ok, quoted } from '@gw/errors';
import type { RateLimitWindow, Result } from '@gw/errors';
import type { CatalogueFollower } from '../catalogue/catalogue-snapshot';
import type { ListedModel, PolicyClient } from '../clients/policy';
import type { QuotaClient } from '../clients/quota';
import type { VerifiedKey } from '../domain/key';
import { authenticate } from './authenticate';
import type { CallerRequest, KeyVerifier, RequestScope } from './types';

/** One entry of GET /v1/models, in the upstream wire format. */
export interface ModelObject {
  type: 'model';
  id: string;
  display_name: string;
  created_at: string;
}

export interface ModelPage {
  data: ModelObject[];
  has_more: boolean;
  first_id: string | null;
  last_id: string | null;
}

export interface PageQuery {
  limit: number;
  afterId?: string;
  beforeId?: string;
}

const invalid = (message: string) => err(gatewayError('invalid_request_error', message));

export function modelObject(model: ListedModel): ModelObject {
  return {
    type: 'model',
    id: model.id,
    display_name: model.displayName,
    created_at: new Date(Number(model.createdAtUnixMs)).toISOString().replace('.000Z', 'Z'),
  };
}

/** Reads limit, after_id and before_id as the SDKs send them. */
export function pageQuery(query: Record<string, unknown>): Result<PageQuery> {
  const { limit, after_id: afterId, before_id: beforeId } = query;
  let pageLimit = 20;
  if (limit !== undefined) {
    pageLimit = Number(limit);
    if (typeof limit !== 'string' || !/^\d+$/.test(limit) || pageLimit < 1 || pageLimit > 1000) {
      return invalid('limit: expected an integer from 1 to 1000.');
    }
  }
  if (afterId !== undefined && typeof afterId !== 'string') return invalid('after_id: expected a model id.');
  if (beforeId !== undefined && typeof beforeId !== 'string') return invalid('before_id: expected a model id.');
  if (afterId !== undefined && beforeId !== undefined) return invalid('Send after_id or before_id, not both.');
  return ok({ limit: pageLimit, afterId, beforeId });
}

/**
 * One page of a newest-first list: after_id pages forwards, before_id backwards; has_more says
 * whether more lie beyond the page in the direction of travel, and is always present.
 */
export function paginate(models: ModelObject[], query: PageQuery): Result<ModelPage> {
  let start = 0;
  let end = Math.min(models.length, query.limit);
  let hasMore = models.length > end;
  const cursor = query.afterId ?? query.beforeId;
  if (cursor !== undefined) {
    const at = models.findIndex((model) => model.id === cursor);
    if (at < 0)
      return invalid(
        `${query.afterId !== undefined ? 'after_id' : 'before_id'}: ${quoted(cursor)} is not in your model list.`,
      );
    if (query.afterId !== undefined) {
      start = at + 1;
      end = Math.min(models.length, start + query.limit);
      hasMore = models.length > end;
    } else {
      end = at;
      start = Math.max(0, end - query.limit);
      hasMore = start > 0;
    }
  }
  const data = models.slice(start, end);
  return ok({ data, has_more: hasMore, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
}

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
