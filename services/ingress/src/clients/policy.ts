import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { policyv1 } from '@gw/proto';
import type { Authorization } from '../domain/authorization';
import type { VerifiedKey } from '../domain/key';
import type { ListedModel } from '../domain/models';
import { callScope } from '../domain/request-scope';
import type { RequestScope } from '../domain/request-scope';
import type { Clients } from './connections';
import { ReplyDecoder } from './reply';
import type { MalformedReplies } from './reply';

/** What the request path asks policy (the catalogue subscription is the CatalogueFollower's). */
export interface PolicyClient {
  /** Model, plan, key permissions and residency, with the privacy mode applied to the body. */
  authorize(
    key: VerifiedKey,
    model: string,
    body: Uint8Array,
    scope: RequestScope,
    timeoutMs: number,
  ): Promise<Result<Authorization>>;
  listModels(key: VerifiedKey, scope: RequestScope): Promise<Result<ListedModel[]>>;
}

/** policy's decision: a decision without candidate pools would send nothing anywhere, so it is malformed. */
export function decodeAuthorization(
  decode: ReplyDecoder,
  reply: Pick<policyv1.AuthorizeResponse, 'pools' | 'bodyJson' | 'privacyFlags' | 'placeholders' | 'placeholderNonce'>,
): Result<Authorization> {
  if (reply.pools.length === 0) return decode.malformed('pools');
  const privacyFlags: Record<string, number> = {};
  for (const [type, count] of Object.entries(reply.privacyFlags)) {
    const decoded = decode.count(count, `privacy_flags.${type}`);
    if (!decoded.ok) return decoded;
    privacyFlags[type] = decoded.value;
  }
  if (reply.placeholders.length > 0 && reply.placeholderNonce === '') return decode.malformed('placeholder_nonce');
  return ok({
    pools: reply.pools,
    body: reply.bodyJson,
    privacyFlags,
    placeholders: reply.placeholders.map(({ placeholder, original }) => ({ placeholder, original })),
    placeholderNonce: reply.placeholderNonce,
  });
}

export function decodeModels(decode: ReplyDecoder, reply: policyv1.ListModelsResponse): Result<ListedModel[]> {
  const models: ListedModel[] = [];
  for (const model of reply.models) {
    const id = decode.id(model.id, 'models.id');
    if (!id.ok) return id;
    const createdAt = decode.count(model.createdAtUnixMs, 'models.created_at_unix_ms');
    if (!createdAt.ok) return createdAt;
    models.push({ id: id.value, displayName: model.displayName, createdAtUnixMs: createdAt.value });
  }
  return ok(models);
}

export function policyClient(
  policy: Pick<Clients['policy'], 'authorize' | 'listModels'>,
  malformed: MalformedReplies,
): PolicyClient {
  const decode = new ReplyDecoder('policy', malformed);
  return {
    authorize: async (key, model, body, scope, timeoutMs) => {
      const authorized = await policy.authorize(
        { key: key.record, model, bodyJson: body },
        { ...callScope(scope), timeoutMs },
      );
      return authorized.ok ? decodeAuthorization(decode, authorized.value) : authorized;
    },
    listModels: async (key, scope) => {
      const listed = await policy.listModels({ key: key.record }, callScope(scope));
      return listed.ok ? decodeModels(decode, listed.value) : listed;
    },
  };
}
