import { err, gatewayError, ok, quoted } from '@gw/errors';
import type { Result } from '@gw/errors';

/** A model a key may use, as policy or its catalogue lists it. */
export interface ListedModel {
  id: string;
  displayName: string;
  createdAtUnixMs: number;
}

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
