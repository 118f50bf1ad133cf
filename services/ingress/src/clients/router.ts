import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { policyv1, routerv1 } from '@gw/proto';
import type { TopLevelLayout } from '@gw/json-layout';
import type { UsageCounts } from '@gw/usage';
import type { VerifiedKey } from '../domain/key';
import { callScope } from '../domain/request-scope';
import type { RequestScope } from '../domain/request-scope';
import type { Clients } from './connections';
import { ReplyDecoder } from './reply';
import type { MalformedReplies } from './reply';

/** A request to send upstream, through the router. */
export interface UpstreamRequest {
  key: VerifiedKey;
  model: string;
  /** policy's candidate pools, passed on as policy gave them. */
  pools: policyv1.CandidatePool[];
  /** The body to send: the caller's, or the one the privacy mode produced. */
  body: Uint8Array;
  /** Where the body's top-level members are, when ingress knows: the router edits them without parsing the body. */
  layout?: TopLevelLayout;
  /** Upstream protocol headers (anthropic-version, anthropic-beta) and the query string, passed on. */
  headers: Record<string, string>;
  query: string;
}

/** One event of a completion as the router relays it. */
export type UpstreamEvent =
  | { kind: 'started'; poolId: string; region: string; droppedBetas: string[] }
  | { kind: 'sse'; event: string; data: string }
  | { kind: 'message'; json: Uint8Array }
  /** The upstream's final usage, unbounded as reported (the relay bounds it); undefined when none came. */
  | { kind: 'finished'; usage: UsageCounts | undefined };

export interface TokenCount {
  inputTokens: number;
  /** True when no upstream counted: the number is the router's estimate. */
  estimated: boolean;
  /** Empty when estimated. */
  poolId: string;
}

export interface RouterCallOptions {
  /** Ends the call: the client left, or its key stopped working. */
  signal: AbortSignal;
  timeoutMs: number;
}

/**
 * What ingress asks the router. The one seam between the pipeline and how completions travel (frames on
 * long-lived multiplexed streams): a change of transport stays inside an implementation of this interface.
 */
export interface RouterClient {
  complete(
    request: UpstreamRequest & { stream: boolean },
    scope: RequestScope,
    options: RouterCallOptions,
  ): AsyncIterable<Result<UpstreamEvent>>;
  countTokens(request: UpstreamRequest, scope: RequestScope, options: RouterCallOptions): Promise<Result<TokenCount>>;
}

/** One router event; undefined for an event kind this ingress does not know (a newer router's), skipped. */
export function decodeUpstreamEvent(
  decode: ReplyDecoder,
  reply: routerv1.CompleteResponse,
): Result<UpstreamEvent> | undefined {
  const event = reply.event;
  switch (event.case) {
    case 'started': {
      const poolId = decode.id(event.value.poolId, 'started.pool_id');
      if (!poolId.ok) return poolId;
      return ok({
        kind: 'started',
        poolId: poolId.value,
        region: event.value.region,
        droppedBetas: event.value.droppedBetas,
      });
    }
    case 'sse':
      return ok({ kind: 'sse', event: event.value.event, data: Buffer.from(event.value.data).toString('utf8') });
    case 'message':
      return ok({ kind: 'message', json: event.value.json });
    case 'finished': {
      const usage = event.value.usage;
      return ok({
        kind: 'finished',
        usage: usage && {
          inputTokens: Number(usage.inputTokens),
          outputTokens: Number(usage.outputTokens),
          cacheReadInputTokens: Number(usage.cacheReadInputTokens),
          cacheCreationInputTokens: Number(usage.cacheCreationInputTokens),
        },
      });
    }
    default:
      return undefined;
  }
}

export function decodeTokenCount(decode: ReplyDecoder, reply: routerv1.CountTokensResponse): Result<TokenCount> {
  const inputTokens = decode.count(reply.inputTokens, 'input_tokens');
  if (!inputTokens.ok) return inputTokens;
  return ok({ inputTokens: inputTokens.value, estimated: reply.estimated, poolId: reply.poolId });
}

const requestOf = (request: UpstreamRequest, scope: RequestScope) => ({
  requestId: scope.requestId,
  key: request.key.record,
  model: request.model,
  pools: request.pools,
  bodyJson: request.body,
  bodyLayout: request.layout,
  headers: request.headers,
  query: request.query,
});

/** The router over its multiplexed streams: a completion is a server-streaming call on one of them. */
export function routerClient(
  router: Pick<Clients['router'], 'complete' | 'countTokens'>,
  malformed: MalformedReplies,
): RouterClient {
  const decode = new ReplyDecoder('router', malformed);
  return {
    async *complete(request, scope, options) {
      const replies = router.complete(
        { ...requestOf(request, scope), stream: request.stream },
        { ...callScope(scope), ...options },
      );
      for await (const reply of replies) {
        const event = reply.ok ? decodeUpstreamEvent(decode, reply.value) : reply;
        if (event) yield event;
      }
    },
    countTokens: async (request, scope, options) => {
      const counted = await router.countTokens(requestOf(request, scope), { ...callScope(scope), ...options });
      return counted.ok ? decodeTokenCount(decode, counted.value) : counted;
    },
  };
}
