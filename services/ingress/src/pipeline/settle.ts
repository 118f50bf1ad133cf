import { errorEnvelope, gatewayError } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import { eventsv1 } from '@gw/proto';
import { billableTokens, boundedUsage } from '@gw/usage';
import type { UsageCounts as TokenCounts } from '@gw/usage';
import type { Admission } from './admit';
import { newRelayState } from './relay';
import type { RelayState } from './relay';
import type { SettledRequest } from '../telemetry/edge-metrics';
import type { CallerRequest, RequestUsage, ResponseSink, SettleDeps, UsageEventInit } from './types';

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
  /** The request's usage records (its provisional one written as it went upstream). */
  usage: RequestUsage;
}

/** What settling decided about a request: how it ended, what it consumed, what is billed. */
export interface Settlement {
  end: RequestEnd;
  failure: GatewayError | undefined;
  tokens: TokenCounts;
  billable: number;
  gatewayFailed: boolean;
  startedAt: number;
  endedAt: number;
}

/** The usage event of a settled request, field by field: what metering bills and the dashboard shows. */
export function usageEventOf(
  requestId: string,
  admission: Admission,
  state: RelayState,
  settled: Settlement,
): UsageEventInit {
  const { key, limits } = admission;
  const { tokens } = settled;
  return {
    eventId: requestId,
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
    billableTokens: BigInt(settled.billable),
    outcome: settled.gatewayFailed ? eventsv1.Outcome.GATEWAY_ERROR : outcomes[settled.end],
    errorType: settled.failure?.type ?? '',
    plan: key.plan,
    allowanceTokens: BigInt(limits?.monthlyTokens ?? 0),
    overageEnabled: limits?.overage ?? false,
    startedAtUnixMs: BigInt(settled.startedAt),
    endedAtUnixMs: BigInt(settled.endedAt),
    streamed: admission.streamed,
  };
}

/**
 * The provisional usage event, written as the request goes upstream: what it is billed should its final
 * event never become durable (the process died first). The most it may cost: the gateway's estimate of its
 * input (what is billed whenever the upstream reports no usage) and its whole `max_tokens` of output, which
 * no answer exceeds; outcome gateway_error, ended when it started. Its event id is the request's, so the
 * final event and this one are never both billed.
 */
export function provisionalEventOf(requestId: string, admission: Admission, startedAt: number): UsageEventInit {
  const { counts: tokens } = boundedUsage({
    ...noTokens,
    inputTokens: admission.inputEstimate,
    outputTokens: admission.maxTokens,
  });
  const settled: Settlement = {
    end: 'failed',
    failure: gatewayError('api_error', 'The gateway stopped before the request settled.'),
    tokens,
    billable: admission.live ? billableTokens(tokens) : 0,
    gatewayFailed: true,
    startedAt,
    endedAt: startedAt,
  };
  return usageEventOf(requestId, admission, newRelayState(), settled);
}

/**
 * The client's sink, holding every call (in order) until the request's provisional usage record has
 * settled, so that nothing reaches the client before a record billing it is durable; from then on, calls
 * pass straight through. A call that throws while the held ones are replayed (the connection broke) is
 * thrown again by the next call.
 */
export function billedSink(sink: ResponseSink, provisionalSettled: Promise<unknown>): ResponseSink {
  let held: ((target: ResponseSink) => void)[] | undefined = [];
  let broken: { error: unknown } | undefined;
  void provisionalSettled.then(() => {
    const calls = held ?? [];
    held = undefined;
    try {
      for (const write of calls) write(sink);
    } catch (error) {
      broken = { error };
    }
  });
  const call = (write: (target: ResponseSink) => void): void => {
    if (broken) throw broken.error;
    if (held) held.push(write);
    else write(sink);
  };
  return {
    setRateLimit: (window) => call((target) => target.setRateLimit(window)),
    fail: (error) => call((target) => target.fail(error)),
    sendJson: (body, region) => call((target) => target.sendJson(body, region)),
    startStream: (region) => call((target) => target.startStream(region)),
    writeEvent: (event, data) => call((target) => target.writeEvent(event, data)),
    endStream: () => call((target) => target.endStream()),
    setPrivacyFlags: (header) => call((target) => target.setPrivacyFlags(header)),
    setDroppedBetas: (names) => call((target) => target.setDroppedBetas(names)),
  };
}

/** The metrics of a settled request. */
export function settledRequestOf(admission: Admission, state: RelayState, settled: Settlement): SettledRequest {
  const routerFirstEventMs = elapsedMs(state.relayStartedAt, state.firstEventAt);
  return {
    model: admission.model,
    region: state.started?.region ?? '',
    environment: admission.key.environment,
    streamed: admission.streamed,
    completed: settled.end === 'ok' && settled.failure === undefined,
    errorType: settled.failure?.type,
    tokens: settled.tokens,
    usageCapped: state.usageCapped,
    seconds: (settled.endedAt - settled.startedAt) / 1000,
    firstTokenSeconds:
      state.firstDeltaAtUnixMs === undefined ? undefined : (state.firstDeltaAtUnixMs - settled.startedAt) / 1000,
    routerFirstEventSeconds: routerFirstEventMs === undefined ? undefined : routerFirstEventMs / 1000,
    residency: admission.key.residency,
  };
}

/** The request's log line: ids and numbers, and where the time went. */
function requestLogFields(admission: Admission, state: RelayState, settled: Settlement, usageMs: number) {
  return {
    duration_ms: settled.endedAt - settled.startedAt,
    key_id: admission.key.keyId,
    account_id: admission.key.accountId,
    model: admission.model,
    status: settled.end,
    error_type: settled.failure?.type,
    pool_id: state.started?.poolId,
    region: state.started?.region,
    streamed: admission.streamed,
    input_tokens: settled.tokens.inputTokens,
    output_tokens: settled.tokens.outputTokens,
    billable_tokens: settled.billable,
    // Where the time went: the router's first event after the call, and settling's wait for a durable usage record.
    first_event_ms: elapsedMs(state.relayStartedAt, state.firstEventAt),
    usage_ms: Math.round(usageMs * 100) / 100,
  };
}

/**
 * Stage 5, run whatever ended the request (success, client gone, upstream error, key stopped, an
 * exception in the relay): the lease is released with the tokens consumed, the final usage event joins
 * the spool's group commit, and the client gets the end of its answer without waiting for that sync: the
 * provisional record, durable before the client received anything (billedSink), bills at least as much
 * should the final one be lost. Only when the provisional record was not written does the end of the
 * answer wait for the final one to be durable, so that no completed answer's usage can be lost. Never throws.
 */
export async function settle(
  deps: SettleDeps,
  request: CallerRequest,
  sink: ResponseSink,
  input: SettleInput,
): Promise<void> {
  const { admission, state } = input;
  const { end, failure } = requestEnd(request, state, admission);
  const tokens = consumedTokens(state, end, admission.inputEstimate);
  const billable = admission.live ? billableTokens(tokens) : 0;
  input.releaseLease(BigInt(billable));
  const usageStartedAt = performance.now();
  const settled = (endedAt: number): Settlement => ({
    end,
    failure,
    tokens,
    billable,
    gatewayFailed: input.gatewayFailed,
    startedAt: input.startedAt,
    endedAt,
  });
  const finalDurable = input.usage.finish(usageEventOf(request.requestId, admission, state, settled(Date.now())));
  if (!(await input.usage.provisionalDurable)) await finalDurable;
  const usageMs = performance.now() - usageStartedAt;
  try {
    finishResponse(request, sink, admission, state, end, failure);
  } catch (error) {
    // The connection broke while the end was written: nothing more can reach this client.
    deps.log.failure(error, request, { stage: 'settle' });
  }
  const done = settled(Date.now());
  deps.reportSettled(settledRequestOf(admission, state, done), request);
  deps.log.request(request, requestLogFields(admission, state, done, usageMs));
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
