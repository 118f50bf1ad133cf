import { errorEnvelope, gatewayError } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import { eventsv1 } from '@gw/proto';
import { billableTokens } from '@gw/usage';
import type { UsageCounts as TokenCounts } from '@gw/usage';
import type { Admission } from './admit';
import type { RelayState } from './relay';
import type { CallerRequest, MessagesDeps, ResponseSink } from './types';

const noTokens: TokenCounts = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

/**
 * What the request consumed. The upstream's final usage where it arrived; otherwise (the client left,
 * the upstream failed, the key stopped, the gateway failed mid-stream) the input and cache tokens of
 * `message_start` plus the output delivered so far: the upstream's latest cumulative count, and never
 * less than the number of content deltas relayed (each carries at least one token). A request the client
 * or a key stop ended after it was sent on, before the upstream's `message_start` (before the response
 * headers, or a whole answer not yet read), is billed the gateway's estimate of its input: the upstream
 * already read it, and charges for it.
 */
export function consumedTokens(state: RelayState, end: RequestEnd, inputEstimate: number): TokenCounts {
  if (state.finalUsage) return state.finalUsage;
  const forwardedThenStopped = (end === 'cancelled' || end === 'key_stopped') && state.relayStartedAt !== undefined;
  const start = state.startUsage ?? (forwardedThenStopped ? { ...noTokens, inputTokens: inputEstimate } : noTokens);
  const output = Math.max(start.outputTokens, state.reportedOutputTokens, state.deltasRelayed);
  return state.startUsage || forwardedThenStopped || output > 0 ? { ...start, outputTokens: output } : noTokens;
}

export type RequestEnd = 'ok' | 'cancelled' | 'key_stopped' | 'failed';

/** How the request ended, and the error the client is told (none when it left or all went well). */
export function requestEnd(request: CallerRequest, state: RelayState, admission: Admission) {
  let failure = state.keyStop ?? state.failure;
  const cancelled = request.signal.aborted && !state.keyStop;
  if (!failure && !cancelled && (!state.started || (!admission.streamed && !state.heldMessage))) {
    // The router ended without answering: a failure of the gateway, not of the caller.
    failure = gatewayError('api_error', 'The gateway received no response for this request. Retry once.');
  }
  const end: RequestEnd = state.keyStop ? 'key_stopped' : cancelled ? 'cancelled' : failure ? 'failed' : 'ok';
  return { end, failure: cancelled ? undefined : failure };
}

const outcomes: Record<RequestEnd, eventsv1.Outcome> = {
  ok: eventsv1.Outcome.SUCCESS,
  cancelled: eventsv1.Outcome.CLIENT_CANCELLED,
  key_stopped: eventsv1.Outcome.REVOKED,
  failed: eventsv1.Outcome.UPSTREAM_ERROR,
};

export interface SettleInput {
  admission: Admission;
  state: RelayState;
  /** Frees the concurrency lease and charges the tokens (retried until quota has it). */
  releaseLease(billableTokens: bigint): void;
  /** True when the relay ended by a failure of the gateway's own code. */
  gatewayFailed: boolean;
  startedAt: number;
}

/**
 * Stage 5, run whatever ended the request (success, client gone, upstream error, key stopped, an
 * exception in the relay): the lease is released with the tokens consumed, the usage event is made
 * durable, and only then does the client get the end of its answer, so that no completed answer's
 * usage can be lost. Never throws.
 */
export async function settle(
  deps: MessagesDeps,
  request: CallerRequest,
  sink: ResponseSink,
  input: SettleInput,
): Promise<void> {
  const { admission, state } = input;
  const { key } = admission;
  const { end, failure } = requestEnd(request, state, admission);
  const tokens = consumedTokens(state, end, admission.inputEstimate);
  const billable = admission.live ? billableTokens(tokens) : 0;
  input.releaseLease(BigInt(billable));
  const usageStartedAt = performance.now();
  await deps.recordUsage(
    {
      eventId: request.requestId,
      accountId: key.accountId,
      keyId: key.keyId,
      environment: key.environment,
      model: admission.model,
      poolId: state.started?.poolId ?? '',
      region: state.started?.region ?? '',
      inputTokens: BigInt(tokens.inputTokens),
      outputTokens: BigInt(tokens.outputTokens),
      cacheReadInputTokens: BigInt(tokens.cacheReadInputTokens),
      cacheCreationInputTokens: BigInt(tokens.cacheCreationInputTokens),
      billableTokens: BigInt(billable),
      outcome: input.gatewayFailed ? eventsv1.Outcome.GATEWAY_ERROR : outcomes[end],
      errorType: failure?.type ?? '',
      plan: key.plan,
      allowanceTokens: admission.limits?.monthlyTokens ?? 0n,
      overageEnabled: admission.limits?.overage ?? false,
      startedAtUnixMs: BigInt(input.startedAt),
      endedAtUnixMs: BigInt(Date.now()),
      streamed: admission.streamed,
    },
    request,
  );
  const usageMs = performance.now() - usageStartedAt;
  try {
    finishResponse(request, sink, admission, state, end, failure);
  } catch (error) {
    // The connection broke while the end was written: nothing more can reach this client.
    deps.logFailure(error, request, { stage: 'settle' });
  }
  const endedAt = Date.now();
  const routerFirstEventMs = elapsedMs(state.relayStartedAt, state.firstEventAt);
  deps.reportSettled(
    {
      model: admission.model,
      region: state.started?.region ?? '',
      environment: key.environment,
      streamed: admission.streamed,
      completed: end === 'ok' && failure === undefined,
      errorType: failure?.type,
      tokens,
      usageCapped: state.usageCapped,
      seconds: (endedAt - input.startedAt) / 1000,
      firstTokenSeconds:
        state.firstDeltaAtUnixMs === undefined ? undefined : (state.firstDeltaAtUnixMs - input.startedAt) / 1000,
      routerFirstEventSeconds: routerFirstEventMs === undefined ? undefined : routerFirstEventMs / 1000,
      residency: key.residency,
    },
    request,
  );
  deps.logRequest(request, {
    duration_ms: endedAt - input.startedAt,
    key_id: key.keyId,
    account_id: key.accountId,
    model: admission.model,
    status: end,
    error_type: failure?.type,
    pool_id: state.started?.poolId,
    region: state.started?.region,
    streamed: admission.streamed,
    input_tokens: tokens.inputTokens,
    output_tokens: tokens.outputTokens,
    billable_tokens: billable,
    // Where the time went: the router's first event after the call, and the wait for a durable usage event.
    first_event_ms: routerFirstEventMs,
    usage_ms: Math.round(usageMs * 100) / 100,
  });
}

function finishResponse(
  request: CallerRequest,
  sink: ResponseSink,
  admission: Admission,
  state: RelayState,
  end: RequestEnd,
  failure: GatewayError | undefined,
): void {
  if (end === 'cancelled') return;
  if (failure) {
    if (state.streamOpened) {
      sink.writeEvent('error', JSON.stringify(errorEnvelope(failure, request.requestId)));
      sink.endStream();
    } else {
      sink.fail(failure);
    }
  } else if (admission.streamed) {
    if (state.heldStop !== undefined) sink.writeEvent('message_stop', state.heldStop);
    sink.endStream();
  } else if (state.heldMessage) {
    sink.sendJson(state.heldMessage, state.started?.region ?? '');
  }
}

function elapsedMs(from: number | undefined, to: number | undefined): number | undefined {
  return from === undefined || to === undefined ? undefined : Math.round((to - from) * 100) / 100;
}
