import type { GatewayError } from '@gw/errors';
import { expiredError } from '../domain/in-flight';
import { restoreMessage, StreamRestoration } from '../domain/restoration';
import { boundedUsage } from '@gw/usage';
import type { UsageCounts as TokenCounts } from '@gw/usage';
import type { Admission } from './admit';
import { callScope } from './types';
import type { CallerRequest, MessagesDeps, ResponseSink } from './types';

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

/** Milliseconds a timer can wait; a key expiring later than that cannot end a request in flight. */
const longestTimerMs = 2 ** 31 - 1;

const noCounts: TokenCounts = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

interface UpstreamUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

/** A count as the upstream wrote it; anything but a number is 0 (bounded by `bounded`). */
const count = (value: unknown) => (typeof value === 'number' ? value : 0);

/** The counts bounded as quota and metering bound them; an implausible one is noted for the metric. */
function bounded(state: RelayState, counts: TokenCounts): TokenCounts {
  const result = boundedUsage(counts);
  if (result.capped) state.usageCapped = true;
  return result.counts;
}

/** Reads the usage of `message_start` and `message_delta`; a payload that is not JSON bills nothing more. */
function observeUsage(state: RelayState, event: string, data: string): void {
  try {
    if (event === 'message_start') {
      const usage = (JSON.parse(data) as { message?: { usage?: UpstreamUsage } }).message?.usage;
      if (usage) {
        state.startUsage = bounded(state, {
          inputTokens: count(usage.input_tokens),
          outputTokens: count(usage.output_tokens),
          cacheReadInputTokens: count(usage.cache_read_input_tokens),
          cacheCreationInputTokens: count(usage.cache_creation_input_tokens),
        });
      }
    } else {
      const usage = (JSON.parse(data) as { usage?: UpstreamUsage }).usage;
      if (usage) {
        const output = bounded(state, { ...noCounts, outputTokens: count(usage.output_tokens) }).outputTokens;
        state.reportedOutputTokens = Math.max(state.reportedOutputTokens, output);
      }
    }
  } catch {
    // Not JSON: the relay passes it on as the upstream sent it; billing keeps what it knew.
  }
}

/**
 * Stage 4: the router's events to the client. A streamed answer is written event by event (through the
 * privacy restorer in mode `tokenise`); `message_stop` and a whole answer are held for settling. The
 * upstream call ends when the client goes away or the key stops working (revocation, `expires_at`).
 */
export async function relay(
  deps: MessagesDeps,
  request: CallerRequest,
  sink: ResponseSink,
  admission: Admission,
  keyRevoked: AbortSignal,
  state: RelayState,
): Promise<void> {
  const { key } = admission;
  const keyStopped = new AbortController();
  const stopOnRevocation = () => keyStopped.abort(keyRevoked.reason);
  keyRevoked.addEventListener('abort', stopOnRevocation, { once: true });
  if (keyRevoked.aborted) stopOnRevocation();
  const untilExpiry = key.expiresAtUnixMs === undefined ? undefined : Number(key.expiresAtUnixMs) - Date.now();
  const expiry =
    untilExpiry !== undefined && untilExpiry <= longestTimerMs
      ? setTimeout(() => keyStopped.abort(expiredError()), Math.max(0, untilExpiry))
      : undefined;
  const restoration = admission.restoration;
  const streamRestoration = restoration && new StreamRestoration(restoration);
  state.relayStartedAt = performance.now();
  try {
    const events = deps.clients.router.complete(
      {
        requestId: request.requestId,
        key,
        model: admission.model,
        pools: admission.pools,
        bodyJson: admission.body,
        stream: admission.streamed,
        headers: request.protocolHeaders,
        query: request.query,
      },
      {
        ...callScope(request),
        signal: AbortSignal.any([request.signal, keyStopped.signal]),
        timeoutMs: deps.completionTimeoutMs,
      },
    );
    for await (const item of events) {
      state.firstEventAt ??= performance.now();
      if (!item.ok) {
        state.failure = item.error;
        break;
      }
      const event = item.value.event;
      switch (event.case) {
        case 'started':
          state.started = { poolId: event.value.poolId, region: event.value.region };
          if (event.value.droppedBetas.length > 0) sink.setDroppedBetas(event.value.droppedBetas);
          if (admission.streamed) {
            sink.startStream(state.started.region);
            state.streamOpened = true;
          }
          break;
        case 'sse': {
          const name = event.value.event;
          const data = Buffer.from(event.value.data).toString('utf8');
          if (name === 'message_start' || name === 'message_delta') observeUsage(state, name, data);
          const relayed = streamRestoration ? streamRestoration.transform(name, data) : [[name, data] as const];
          for (const [relayedName, relayedData] of relayed) {
            if (relayedName === 'message_stop') {
              state.heldStop = relayedData;
              continue;
            }
            sink.writeEvent(relayedName, relayedData);
            if (relayedName === 'content_block_delta') {
              state.deltasRelayed += 1;
              state.firstDeltaAtUnixMs ??= Date.now();
            }
          }
          break;
        }
        case 'message':
          state.heldMessage = restoration ? restoreMessage(event.value.json, restoration) : event.value.json;
          break;
        case 'finished': {
          const usage = event.value.usage;
          if (usage) {
            state.finalUsage = bounded(state, {
              inputTokens: Number(usage.inputTokens),
              outputTokens: Number(usage.outputTokens),
              cacheReadInputTokens: Number(usage.cacheReadInputTokens),
              cacheCreationInputTokens: Number(usage.cacheCreationInputTokens),
            });
          }
          break;
        }
        default:
          break;
      }
    }
  } finally {
    clearTimeout(expiry);
    keyRevoked.removeEventListener('abort', stopOnRevocation);
    if (keyStopped.signal.aborted) state.keyStop = keyStopped.signal.reason as GatewayError;
  }
}
