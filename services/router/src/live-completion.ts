import { err, gatewayError, internalErrorMessage, ok } from '@gw/errors';
import type { CompletionRequest, CompletionStream, JsonObject } from './completion';
import { parseJsonObject, parseLaidOutBody } from './completion';
import { fittingLayout } from './adapters/raw-body';
import { sendWithFailover } from './failover';
import type { FailoverDeps } from './failover';
import type { UpstreamBody } from './upstream-http';

export type LiveCompletionDeps = FailoverDeps;

/**
 * The caller's body as the adapters read it: its bytes, the layout ingress sent when it fits them, and the parsed
 * object, parsed at once without a layout (as the check of a JSON object) or else only when an adapter that
 * translates the body reads it. Undefined when the body is not a JSON object.
 */
export function bodyForAdapters(
  request: Pick<CompletionRequest, 'body' | 'layout'>,
): { readonly body: JsonObject; rawBody: Uint8Array; layout: CompletionRequest['layout'] } | undefined {
  const layout = fittingLayout(request.body, request.layout);
  let parsed = layout ? undefined : parseJsonObject(request.body);
  if (layout === undefined && parsed === undefined) return undefined;
  return {
    get body() {
      return (parsed ??= parseLaidOutBody(request.body));
    },
    rawBody: request.body,
    layout,
  };
}

/**
 * A live completion: the candidate pools in order, within each the balancer's choice of endpoint
 * (`sendWithFailover`). Until the first byte (Started) a failure of one endpoint moves on to the
 * next; after it, failures are the caller's.
 */
export async function* completeLive(
  request: CompletionRequest,
  signal: AbortSignal,
  deps: LiveCompletionDeps,
): CompletionStream {
  const caller = bodyForAdapters(request);
  if (caller === undefined) {
    yield err(gatewayError('invalid_request_error', 'The request body must be a JSON object.'));
    return;
  }
  const outcome = await sendWithFailover(request, signal, deps, {
    name: 'messages',
    generating: !request.stream,
    callFor: (adapter) => ({
      check: () =>
        adapter.checkRequest?.({
          get body() {
            return caller.body;
          },
          stream: request.stream,
        }) ?? ok(undefined),
      request: (target) =>
        adapter.buildRequest({
          ...target,
          get body() {
            return caller.body;
          },
          rawBody: caller.rawBody,
          layout: caller.layout,
          stream: request.stream,
          headers: request.headers,
          query: request.query,
          requestId: request.requestId,
        }),
      accepts: (contentType) => adapter.acceptsContentType(contentType, request.stream),
      relay: (upstreamBody: UpstreamBody) =>
        adapter.relay(upstreamBody, {
          stream: request.stream,
          model: request.model,
          get body() {
            return caller.body;
          },
        }),
      droppedBetas: adapter.droppedBetas?.(request.headers) ?? [],
    }),
  });
  switch (outcome.kind) {
    case 'cancelled':
      return;
    case 'failed':
      yield err(outcome.error);
      return;
    case 'unsupported':
      // Every adapter completes; only a bug gets here.
      yield err(gatewayError('api_error', internalErrorMessage));
      return;
    case 'answered':
      try {
        const adapter = outcome.pool.adapterWithOptions ?? deps.adapters[outcome.pool.adapter];
        const droppedBetas = adapter.droppedBetas?.(request.headers) ?? [];
        if (droppedBetas.length > 0) deps.metrics.betasDropped(adapter.provider ?? outcome.pool.adapter, droppedBetas);
        yield ok({
          kind: 'started',
          poolId: outcome.pool.id,
          region: outcome.pool.region,
          ...(droppedBetas.length > 0 ? { droppedBetas } : {}),
        });
        yield* outcome.call.relay(outcome.response.body);
      } finally {
        // However the relay ended (also when the caller stopped reading before it began): free the
        // connection and the endpoint's outstanding count.
        outcome.response.discard();
      }
  }
}
