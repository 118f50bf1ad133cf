import type { GatewayError, Result } from '@gw/errors';
import { boundedUsage } from '@gw/usage';
import type { UsageCounts as TokenCounts } from '@gw/usage';
import type { UpstreamEvent } from '../clients/router';
import { expiredError } from '../domain/in-flight';
import { restoreMessage, StreamRestoration } from '../domain/restoration';
import type { Restoration } from '../domain/restoration';
import type { Admission } from './admit';
import type { CallerRequest, RelayDeps, ResponseSink } from './types';

/** What the relay learnt, kept outside it so that settling sees it whatever ended the relay. */
export interface RelayState {
  /** The pool that answered, once the router said so. */
  started?: { poolId: string; region: string };
  /** True once SSE headers went out: from then on failures are `error` events. */
  streamOpened: boolean;
  /** The upstream's final usage (the router's `finished`). */
  finalUsage?: TokenCounts;
  /** Usage from the stream's `message_start` (input and cache tokens), for an end before `finished`. */
  startUsage?: TokenCounts;
  /** The latest cumulative `output_tokens` a `message_delta` reported. */
  reportedOutputTokens: number;
  /** True when a count the upstream reported was above the plausible bound, and was capped (@gw/usage). */
  usageCapped: boolean;
  /** Content deltas written to the client, and when the first was (Date.now(), for time to first token). */
  deltasRelayed: number;
  firstDeltaAtUnixMs?: number;
  failure?: GatewayError;
  /** Set when a revocation or `expires_at` ended the request. */
  keyStop?: GatewayError;
  /** performance.now() when the router was called, and when its first event arrived (for the log). */
  relayStartedAt?: number;
  firstEventAt?: number;
  /** `message_stop` and a whole answer wait until their usage is durable. */
  heldStop?: string;
  heldMessage?: Uint8Array;
}

export function newRelayState(): RelayState {
  return { streamOpened: false, reportedOutputTokens: 0, usageCapped: false, deltasRelayed: 0 };
}

/** What the client is sent for one upstream event, in order. */
export type RelayOutput =
  | { kind: 'dropped_betas'; names: string[] }
  | { kind: 'start_stream'; region: string }
  | { kind: 'event'; event: string; data: string };

/** What the reducer needs besides the state: the request's shape and how to restore its originals. */
export interface RelayContext {
  streamed: boolean;
  /** Mode `tokenise`: the stream's restorer (it holds back what may still become a placeholder). */
  streamRestoration: Pick<StreamRestoration, 'transform'> | undefined;
  restoration: Restoration | undefined;
}

/** A content delta reached the client: counted (each carries at least one token) and, the first, timed. */
export function deltaWritten(state: RelayState, nowUnixMs: number): RelayState {
  return {
    ...state,
    deltasRelayed: state.deltasRelayed + 1,
    firstDeltaAtUnixMs: state.firstDeltaAtUnixMs ?? nowUnixMs,
  };
}

const noCounts: TokenCounts = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

interface UpstreamUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

/** A count as the upstream wrote it; anything but a number is 0 (then bounded). */
const count = (value: unknown) => (typeof value === 'number' ? value : 0);

/** The counts bounded as quota and metering bound them; an implausible one is noted for the metric. */
function bounded(state: RelayState, counts: TokenCounts): { state: RelayState; counts: TokenCounts } {
  const result = boundedUsage(counts);
  return { state: result.capped ? { ...state, usageCapped: true } : state, counts: result.counts };
}

/** Reads the usage of `message_start` and `message_delta`; a payload that is not JSON bills nothing more. */
export function observeUsage(state: RelayState, event: string, data: string): RelayState {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    // Not JSON: the relay passes it on as the upstream sent it; billing keeps what it knew.
    return state;
  }
  if (event === 'message_start') {
    const usage = (parsed as { message?: { usage?: UpstreamUsage } } | null)?.message?.usage;
    if (!usage) return state;
    const start = bounded(state, {
      inputTokens: count(usage.input_tokens),
      outputTokens: count(usage.output_tokens),
      cacheReadInputTokens: count(usage.cache_read_input_tokens),
      cacheCreationInputTokens: count(usage.cache_creation_input_tokens),
    });
    return { ...start.state, startUsage: start.counts };
  }
  const usage = (parsed as { usage?: UpstreamUsage } | null)?.usage;
  if (!usage) return state;
  const output = bounded(state, { ...noCounts, outputTokens: count(usage.output_tokens) });
  return {
    ...output.state,
    reportedOutputTokens: Math.max(state.reportedOutputTokens, output.counts.outputTokens),
  };
}

/** An SSE event: usage observed, then written (through the restorer), `message_stop` held for settling. */
function relaySse(state: RelayState, name: string, data: string, context: RelayContext) {
  let next = name === 'message_start' || name === 'message_delta' ? observeUsage(state, name, data) : state;
  const outputs: RelayOutput[] = [];
  const relayed = context.streamRestoration ? context.streamRestoration.transform(name, data) : [[name, data] as const];
  for (const [relayedName, relayedData] of relayed) {
    if (relayedName === 'message_stop') {
      next = { ...next, heldStop: relayedData };
      continue;
    }
    outputs.push({ kind: 'event', event: relayedName, data: relayedData });
  }
  return { state: next, outputs };
}

/**
 * The relay's reducer: one upstream event, the state before it, and what the client is sent for it.
 * Pure but for the stream restorer, which holds back text across events by design.
 */
export function relayEvent(
  state: RelayState,
  event: UpstreamEvent,
  context: RelayContext,
): { state: RelayState; outputs: RelayOutput[] } {
  switch (event.kind) {
    case 'started': {
      const outputs: RelayOutput[] = [];
      if (event.droppedBetas.length > 0) outputs.push({ kind: 'dropped_betas', names: event.droppedBetas });
      if (context.streamed) outputs.push({ kind: 'start_stream', region: event.region });
      const started = { poolId: event.poolId, region: event.region };
      return { state: { ...state, started, streamOpened: state.streamOpened || context.streamed }, outputs };
    }
    case 'sse':
      return relaySse(state, event.event, event.data, context);
    case 'message': {
      const heldMessage = context.restoration ? restoreMessage(event.json, context.restoration) : event.json;
      return { state: { ...state, heldMessage }, outputs: [] };
    }
    case 'finished': {
      if (!event.usage) return { state, outputs: [] };
      const final = bounded(state, event.usage);
      return { state: { ...final.state, finalUsage: final.counts }, outputs: [] };
    }
  }
}

function write(sink: ResponseSink, output: RelayOutput): void {
  if (output.kind === 'dropped_betas') sink.setDroppedBetas(output.names);
  else if (output.kind === 'start_stream') sink.startStream(output.region);
  else sink.writeEvent(output.event, output.data);
}

/** Milliseconds a timer can wait; a key expiring later than that cannot end a request in flight. */
const longestTimerMs = 2 ** 31 - 1;

/**
 * Ends the router call when the client goes away or the key stops working (a revocation, or its `expires_at`
 * passing while the request runs); `keyStop` tells which key stop it was. One controller for both, not a signal
 * per cause joined by `AbortSignal.any`: each costs an EventTarget, on every request.
 */
function callStopSignal(clientGone: AbortSignal, keyRevoked: AbortSignal, expiresAtUnixMs: number | undefined) {
  const stopped = new AbortController();
  let keyStop: GatewayError | undefined;
  const stopForKey = (reason: GatewayError) => {
    keyStop ??= reason;
    stopped.abort(reason);
  };
  const stopOnRevocation = () => stopForKey(keyRevoked.reason as GatewayError);
  const stopOnClientGone = () => stopped.abort(clientGone.reason);
  keyRevoked.addEventListener('abort', stopOnRevocation, { once: true });
  clientGone.addEventListener('abort', stopOnClientGone, { once: true });
  if (keyRevoked.aborted) stopOnRevocation();
  if (clientGone.aborted) stopOnClientGone();
  const untilExpiry = expiresAtUnixMs === undefined ? undefined : expiresAtUnixMs - Date.now();
  const expiry =
    untilExpiry !== undefined && untilExpiry <= longestTimerMs
      ? setTimeout(() => stopForKey(expiredError()), Math.max(0, untilExpiry))
      : undefined;
  return {
    signal: stopped.signal,
    keyStop: () => keyStop,
    dispose: () => {
      clearTimeout(expiry);
      keyRevoked.removeEventListener('abort', stopOnRevocation);
      clientGone.removeEventListener('abort', stopOnClientGone);
    },
  };
}

/**
 * The router's events after `finished`, read without waiting: `finished` is the call's last event, and what
 * follows it is the call's end (its status), which comes after the router's own bookkeeping of the call.
 * Read to the end rather than dropped, so that the call ends as it would have, not cancelled.
 */
function drainAfterFinished(events: AsyncIterator<unknown>): void {
  const next = (): Promise<void> => events.next().then((item) => (item.done ? undefined : next()));
  next().catch(() => undefined);
}

/** Where the relay keeps its state, so that settling reads it whatever ended the relay. */
export interface RelayStateRef {
  current: RelayState;
}

/**
 * Stage 4: the router's events to the client, folded through `relayEvent`. A streamed answer is written
 * event by event (through the privacy restorer in mode `tokenise`); `message_stop` and a whole answer
 * are held for settling. The upstream call ends when the client goes away or the key stops working
 * (revocation, `expires_at`).
 */
export async function relay(
  deps: Pick<RelayDeps, 'router' | 'completionTimeoutMs'>,
  request: CallerRequest,
  sink: ResponseSink,
  admission: Admission,
  keyRevoked: AbortSignal,
  ref: RelayStateRef,
): Promise<void> {
  const callStop = callStopSignal(request.signal, keyRevoked, admission.key.expiresAtUnixMs);
  const { restoration, streamed } = admission;
  const streamRestoration = restoration && new StreamRestoration(restoration);
  ref.current = { ...ref.current, relayStartedAt: performance.now() };
  let events: AsyncIterator<Result<UpstreamEvent>> | undefined;
  let drained = false;
  try {
    const call = deps.router.complete(
      {
        key: admission.key,
        model: admission.model,
        pools: admission.pools,
        body: admission.body,
        layout: admission.layout,
        stream: streamed,
        headers: request.protocolHeaders,
        query: request.query,
      },
      request,
      { signal: callStop.signal, timeoutMs: deps.completionTimeoutMs },
    );
    events = call[Symbol.asyncIterator]();
    for (let next = await events.next(); !next.done; next = await events.next()) {
      const item = next.value;
      ref.current.firstEventAt ??= performance.now();
      if (!item.ok) {
        ref.current = { ...ref.current, failure: item.error };
        break;
      }
      const step = relayEvent(ref.current, item.value, { streamed, streamRestoration, restoration });
      ref.current = step.state;
      for (const output of step.outputs) {
        write(sink, output);
        if (output.kind === 'event' && output.event === 'content_block_delta') {
          ref.current = deltaWritten(ref.current, Date.now());
        }
      }
      if (item.value.kind === 'finished') {
        // The answer is whole: settling need not wait for the call's end.
        drainAfterFinished(events);
        drained = true;
        break;
      }
    }
  } finally {
    // Stopped early (a failure, an exception): the call ends here, as leaving a `for await` would end it.
    if (!drained) await events?.return?.();
    callStop.dispose();
    const keyStop = callStop.keyStop();
    if (keyStop) ref.current = { ...ref.current, keyStop };
  }
}
