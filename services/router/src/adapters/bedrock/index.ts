import { err, gatewayError, ok } from '@gw/errors';
import type { CompletionStream } from '../../completion';
import { noUsage } from '../../completion';
import type { TokenUsage } from '../../completion';
import { errorAfterStart, malformedUpstreamMessage } from '../../upstream-errors';
import type { UpstreamBody, UpstreamHttpRequest } from '../../upstream-http';
import { relayMessage } from '../anthropic';
import { AnthropicStreamReader, acceptsContentType as acceptsAnthropic } from '../anthropic/transform';
import { splitBetas } from '../betas';
import { providerBody } from '../raw-body';
import type { AdapterCall, UpstreamAdapter } from '../types';
import { bedrockAdapterConfig } from './config';
import type { BedrockAdapterConfig } from './config';
import { errorOfExceptionFrame, parseErrorBody } from './errors';
import { EventStreamDecoder, EventStreamError } from './event-stream';
import type { EventStreamFrame } from './event-stream';

export const eventStreamContentType = 'application/vnd.amazon.eventstream';

/**
 * The caller's request as InvokeModel's (or InvokeModelWithResponseStream's): the model id in the
 * path, the body without `model` and `stream`, with `anthropic_version` and the supported betas as
 * `anthropic_beta`. The body is edited at its top level only (`rewriteTopLevel`), every value kept
 * byte for byte. Unsigned: the pool's signer adds SigV4.
 */
export function toInvokeRequest(config: BedrockAdapterConfig, call: AdapterCall): UpstreamHttpRequest {
  const { kept } = splitBetas(call.headers['anthropic-beta'], config.supportedBetas);
  const add: [string, string][] = [['anthropic_version', JSON.stringify(config.anthropicVersion)]];
  if (kept.length > 0) add.push(['anthropic_beta', JSON.stringify(kept)]);
  const body = providerBody(call, add);
  const action = call.stream ? 'invoke-with-response-stream' : 'invoke';
  return {
    url: `${call.endpointUrl}/model/${encodeURIComponent(call.upstreamModel)}/${action}`,
    headers: {
      'content-type': 'application/json',
      accept: call.stream ? eventStreamContentType : 'application/json',
      'x-request-id': call.requestId,
    },
    body,
  };
}

/** `"bytes": "<base64>"` in a chunk's payload, read without parsing the payload (`p` pads it). */
const bytesField = /"bytes"\s*:\s*"([A-Za-z0-9+/=]*)"/;

/**
 * The Messages event a `chunk` frame carries: `{"bytes": "<base64 of the event's JSON>"}`, decoded
 * once; `bytes` are relayed as Bedrock sent them, `type` names the SSE event.
 */
function eventOfChunk(frame: EventStreamFrame): { type: string; data: string; bytes: Buffer } | undefined {
  try {
    const payload = Buffer.from(frame.payload.buffer, frame.payload.byteOffset, frame.payload.byteLength).toString(
      'utf8',
    );
    const encoded = bytesField.exec(payload)?.[1] ?? (JSON.parse(payload) as { bytes?: unknown }).bytes;
    if (typeof encoded !== 'string') return undefined;
    const bytes = Buffer.from(encoded, 'base64');
    const data = bytes.toString('utf8');
    const leading = /^\s*\{\s*"type"\s*:\s*"([a-z_]+)"/.exec(data)?.[1];
    const type = leading ?? (JSON.parse(data) as { type?: unknown }).type;
    return typeof type === 'string' ? { type, data, bytes } : undefined;
  } catch {
    return undefined;
  }
}

const invocationMetricsField = 'amazon-bedrock-invocationMetrics';

/** Bedrock's own counts on message_stop, where it sends them: never fewer tokens than it reports. */
function withInvocationMetrics(usage: TokenUsage, data: string): TokenUsage {
  let metrics: unknown;
  try {
    metrics = (JSON.parse(data) as Record<string, unknown>)[invocationMetricsField];
  } catch {
    return usage;
  }
  if (typeof metrics !== 'object' || metrics === null) return usage;
  const count = (field: string) => {
    const value = (metrics as Record<string, unknown>)[field];
    return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;
  };
  return {
    inputTokens: Math.max(usage.inputTokens, count('inputTokenCount')),
    outputTokens: Math.max(usage.outputTokens, count('outputTokenCount')),
    cacheReadInputTokens: Math.max(usage.cacheReadInputTokens, count('cacheReadInputTokenCount')),
    cacheCreationInputTokens: Math.max(usage.cacheCreationInputTokens, count('cacheWriteInputTokenCount')),
  };
}

const brokenStream = () => gatewayError('api_error', malformedUpstreamMessage);

/**
 * Decodes the event stream as it arrives and relays each chunk's Messages event as the SSE event the
 * Anthropic API would have sent (message_start naming the caller's alias, message_stop without
 * Bedrock's metrics). An exception frame ends the stream with its catalogue error.
 */
async function* relayEventStream(body: UpstreamBody, model: string, config: BedrockAdapterConfig): CompletionStream {
  const decoder = new EventStreamDecoder(config.maxFrameBytes);
  const reader = new AnthropicStreamReader(model);
  let metricsUsage: TokenUsage = noUsage;
  for await (const chunk of body) {
    if (!chunk.ok) {
      const error = errorAfterStart(chunk.error);
      if (error) yield err(error);
      return;
    }
    let frames: EventStreamFrame[];
    try {
      frames = decoder.push(chunk.value);
    } catch (error) {
      if (!(error instanceof EventStreamError)) throw error;
      yield err(brokenStream());
      return;
    }
    for (const frame of frames) {
      if (frame.messageType !== 'event') {
        yield err(errorOfExceptionFrame(frame));
        return;
      }
      if (frame.headers[':event-type'] !== 'chunk') continue;
      const event = eventOfChunk(frame);
      if (event === undefined) {
        yield err(brokenStream());
        return;
      }
      let data: string | undefined;
      if (event.type === 'message_stop') {
        metricsUsage = withInvocationMetrics(metricsUsage, event.data);
        data = '{"type":"message_stop"}';
      }
      const step = reader.accept({ event: event.type, data: event.data });
      if (step.kind === 'fail') {
        yield err(step.error);
        return;
      }
      if (step.kind === 'relay') {
        const replaced = step.data ?? data;
        yield ok({
          kind: 'sse',
          event: step.event,
          data: replaced === undefined ? event.bytes : Buffer.from(replaced),
        });
      }
    }
  }
  if (decoder.midFrame) {
    yield err(brokenStream());
    return;
  }
  const usage = reader.finish();
  if (!usage.ok) {
    yield usage;
    return;
  }
  const merged: TokenUsage = {
    inputTokens: Math.max(usage.value.inputTokens, metricsUsage.inputTokens),
    outputTokens: Math.max(usage.value.outputTokens, metricsUsage.outputTokens),
    cacheReadInputTokens: Math.max(usage.value.cacheReadInputTokens, metricsUsage.cacheReadInputTokens),
    cacheCreationInputTokens: Math.max(usage.value.cacheCreationInputTokens, metricsUsage.cacheCreationInputTokens),
  };
  yield ok({ kind: 'finished', usage: merged });
}

/**
 * Amazon Bedrock's InvokeModel protocol for Anthropic models. Bedrock has no count-tokens call the
 * gateway uses, so the router answers its estimate.
 */
export function createBedrockAdapter(config: BedrockAdapterConfig = bedrockAdapterConfig): UpstreamAdapter {
  return {
    buildRequest: (call) => toInvokeRequest(config, call),
    acceptsContentType: (contentType, stream) => {
      if (!stream) return acceptsAnthropic(contentType, false);
      return contentType?.split(';')[0]?.trim().toLowerCase() === eventStreamContentType;
    },
    parseErrorBody,
    relay: (body, call) => (call.stream ? relayEventStream(body, call.model, config) : relayMessage(body, call.model)),
    droppedBetas: (headers) => splitBetas(headers['anthropic-beta'], config.supportedBetas).dropped,
    provider: 'bedrock',
  };
}
