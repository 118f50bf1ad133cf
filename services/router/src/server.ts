import { err, gatewayError, internalErrorMessage, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { CallContext, MethodsOf, ServiceHandlers } from '@gw/grpc';
import { commonv1, routerv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import { requestLogFields } from '@gw/telemetry';
import { environmentFromProto, residencyFromProto } from '@gw/vocabulary/proto';
import type { Logger } from '@gw/telemetry';
import type { CompletionEvent, CompletionRequest } from './completion';
import type { CountTokensRequest, TokenCount } from './count-tokens';
import type { Router } from './router';

type CompleteResponseInit = MessageInitShape<typeof routerv1.CompleteResponseSchema>;
type CountTokensResponseInit = MessageInitShape<typeof routerv1.CountTokensResponseSchema>;

/** What Complete and CountTokens share: the key's environment and residency, the candidates, body and headers. */
interface RoutedCall {
  requestId: string;
  key?: commonv1.KeyContext;
  model: string;
  pools: { poolId: string; upstreamModel: string }[];
  bodyJson: Uint8Array;
  headers: Record<string, string>;
  query: string;
  bodyLayout?: routerv1.BodyLayout;
}

/** The domain's view of a call; a call without a key environment is a caller's bug. */
function decodeRoutedCall(request: RoutedCall, context: CallContext): Result<CountTokensRequest> {
  const environment = request.key && environmentFromProto(request.key.environment);
  if (!environment) return err(gatewayError('api_error', internalErrorMessage));
  return ok({
    requestId: request.requestId,
    traceContext: context.traceContext,
    accountId: request.key?.accountId ?? '',
    environment,
    residency: request.key && residencyFromProto(request.key.residency),
    model: request.model,
    candidates: request.pools.map((pool) => ({ poolId: pool.poolId, upstreamModel: pool.upstreamModel })),
    body: request.bodyJson,
    layout: request.bodyLayout,
    headers: Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name.toLowerCase(), value])),
    query: request.query,
  });
}

export function decodeCompleteRequest(
  request: routerv1.CompleteRequest,
  context: CallContext,
): Result<CompletionRequest> {
  const decoded = decodeRoutedCall(request, context);
  return decoded.ok ? ok({ ...decoded.value, stream: request.stream }) : decoded;
}

export function decodeCountTokensRequest(
  request: routerv1.CountTokensRequest,
  context: CallContext,
): Result<CountTokensRequest> {
  return decodeRoutedCall(request, context);
}

export function encodeTokenCount(count: TokenCount): CountTokensResponseInit {
  return {
    inputTokens: BigInt(count.inputTokens),
    estimated: count.estimated,
    poolId: count.poolId,
    region: count.region,
  };
}

export function encodeCompletionEvent(event: CompletionEvent): CompleteResponseInit {
  switch (event.kind) {
    case 'started':
      return {
        event: {
          case: 'started',
          value: { poolId: event.poolId, region: event.region, droppedBetas: event.droppedBetas ?? [] },
        },
      };
    case 'sse':
      return { event: { case: 'sse', value: { event: event.event, data: event.data } } };
    case 'message':
      return { event: { case: 'message', value: { json: event.json } } };
    case 'finished':
      return {
        event: {
          case: 'finished',
          value: {
            usage: {
              inputTokens: BigInt(event.usage.inputTokens),
              outputTokens: BigInt(event.usage.outputTokens),
              cacheReadInputTokens: BigInt(event.usage.cacheReadInputTokens),
              cacheCreationInputTokens: BigInt(event.usage.cacheCreationInputTokens),
            },
          },
        },
      };
  }
}

export function routerHandlers(
  router: Router,
  logger: Logger,
): ServiceHandlers<MethodsOf<typeof routerv1.RouterService>> {
  return {
    async *complete(request, context) {
      const decoded = decodeCompleteRequest(request, context);
      if (!decoded.ok) {
        logger.error(requestLogFields(context), 'Complete called without a key environment');
        yield decoded;
        return;
      }
      for await (const item of router.complete(decoded.value, context.signal)) {
        yield item.ok ? ok(encodeCompletionEvent(item.value)) : item;
      }
    },
    async countTokens(request, context) {
      const decoded = decodeCountTokensRequest(request, context);
      if (!decoded.ok) {
        logger.error(requestLogFields(context), 'CountTokens called without a key environment');
        return decoded;
      }
      const counted = await router.countTokens(decoded.value, context.signal);
      return counted.ok ? ok(encodeTokenCount(counted.value)) : counted;
    },
  };
}
