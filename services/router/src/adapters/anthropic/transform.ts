import { err, gatewayError, ok } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import { isJsonObject, noUsage } from '../../completion';
import type { TokenUsage } from '../../completion';
import { errorOfUpstreamEvent, malformedUpstreamMessage } from '../../upstream-errors';
import { editTopLevel, topLevelLayout, topLevelValue } from '@gw/json-layout';
import type { UpstreamHttpRequest } from '../../upstream-http';
import type { AdapterCall, CountTokensCall, UpstreamErrorBody } from '../types';
import type { AnthropicAdapterConfig } from './config';

/**
 * The headers of every call to the upstream: JSON, `anthropic-version` (the caller's, or the SDKs'
 * default), `anthropic-beta` when the caller sent one, the request id, and the pool's credential.
 */
function upstreamHeaders(
  config: AnthropicAdapterConfig,
  call: CountTokensCall,
  accept: string,
): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept,
    'anthropic-version': config.defaultVersion,
    'x-request-id': call.requestId,
  };
  for (const name of config.forwardedHeaders) {
    const value = call.headers[name];
    if (value !== undefined && value !== '') headers[name] = value;
  }
  if (call.credential !== undefined) headers[config.credentialHeader] = call.credential;
  return headers;
}

/**
 * The caller's body with the pool's model id (and, for a Messages call, `stream` as the call has it, so that the
 * relay reads what it expects), every other byte as the caller sent it.
 */
function upstreamBody(call: CountTokensCall, stream?: boolean): Buffer {
  // Ingress has checked the body as one JSON object and found its layout; failing that (or without the bytes, in
  // adapter tests), the parsed copy is the next best thing.
  const raw = call.rawBody;
  const layout = raw && (call.layout ?? topLevelLayout(raw));
  const members: Record<string, unknown> = { model: call.upstreamModel };
  const hasStream = layout ? layout.members.some((member) => member.key === 'stream') : 'stream' in call.body;
  if (stream !== undefined && (stream || hasStream)) members.stream = stream;
  const set = Object.fromEntries(Object.entries(members).map(([key, value]) => [key, JSON.stringify(value)]));
  const edited = raw && layout && editTopLevel(raw, { set }, layout);
  return edited || Buffer.from(JSON.stringify({ ...call.body, ...members }));
}

/** `?beta=true` and the like: the caller's query as it came, for the upstream to judge. */
function withQuery(url: string, query: string): string {
  return query === '' ? url : `${url}?${query}`;
}

/** The caller's request as the upstream's: same body with the pool's model id, the protocol headers and query passed through, and the pool's credential. */
export function toUpstreamRequest(config: AnthropicAdapterConfig, call: AdapterCall): UpstreamHttpRequest {
  return {
    url: withQuery(`${call.endpointUrl}${config.messagesPath}`, call.query),
    headers: upstreamHeaders(config, call, call.stream ? 'text/event-stream' : 'application/json'),
    body: upstreamBody(call, call.stream),
  };
}

/**
 * A count_tokens call: the caller's body as it came, with the pool's model id, and the same headers
 * as a Messages call.
 */
export function toCountTokensRequest(config: AnthropicAdapterConfig, call: CountTokensCall): UpstreamHttpRequest {
  return {
    url: withQuery(`${call.endpointUrl}${config.countTokensPath}`, call.query),
    headers: upstreamHeaders(config, call, 'application/json'),
    body: upstreamBody(call),
  };
}

export function acceptsContentType(contentType: string | undefined, stream: boolean): boolean {
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase();
  return stream ? mediaType === 'text/event-stream' : mediaType === 'application/json';
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** `{"type":"error","error":{"type":…,"message":…}}`, the upstream's error envelope. */
export function parseErrorBody(text: string): UpstreamErrorBody {
  const envelope = parseJson(text);
  const error = isJsonObject(envelope) ? envelope.error : undefined;
  if (!isJsonObject(error)) return {};
  return {
    type: typeof error.type === 'string' ? error.type : undefined,
    message: typeof error.message === 'string' ? error.message : undefined,
  };
}

/** `{"input_tokens": N}`, the upstream's count; a failure when the body is anything else. */
export function inputTokensOfCount(text: string): Result<number> {
  const count = parseJson(text);
  const tokens = isJsonObject(count) ? count.input_tokens : undefined;
  if (typeof tokens !== 'number' || !Number.isSafeInteger(tokens) || tokens < 0) {
    return err(gatewayError('api_error', malformedUpstreamMessage));
  }
  return ok(tokens);
}

/** Applies the counts a wire `usage` object carries over what is known; absent or null fields keep theirs. */
export function mergeUsage(known: TokenUsage, wire: unknown): TokenUsage {
  if (!isJsonObject(wire)) return known;
  const count = (field: string, fallback: number) => {
    const value = wire[field];
    return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
  };
  return {
    inputTokens: count('input_tokens', known.inputTokens),
    outputTokens: count('output_tokens', known.outputTokens),
    cacheReadInputTokens: count('cache_read_input_tokens', known.cacheReadInputTokens),
    cacheCreationInputTokens: count('cache_creation_input_tokens', known.cacheCreationInputTokens),
  };
}

/**
 * A non-streamed Message body as relayed: the upstream's Message with `model` the caller's alias
 * (every other field as the upstream sent it), and its usage; a failure when the body is not a
 * Message.
 */
export function relayedMessage(text: string, model: string): Result<{ json: string; usage: TokenUsage }> {
  const message = parseJson(text);
  if (!isJsonObject(message) || message.type !== 'message')
    return err(gatewayError('api_error', malformedUpstreamMessage));
  // The upstream's bytes but for the model: numbers in tool inputs keep every digit.
  const relayed = editTopLevel(Buffer.from(text, 'utf8'), { set: { model: JSON.stringify(model) } });
  return ok({
    json: relayed?.toString('utf8') ?? JSON.stringify({ ...message, model }),
    usage: mergeUsage(noUsage, message.usage),
  });
}

/** A `message_start` payload whose message names `model`, every other byte as the upstream sent it. */
function withMessageModel(data: string, model: string): string | undefined {
  const bytes = Buffer.from(data, 'utf8');
  const message = topLevelValue(bytes, 'message');
  const named = message && editTopLevel(message, { set: { model: JSON.stringify(model) } });
  return named && editTopLevel(bytes, { set: { message: named.toString('utf8') } })?.toString('utf8');
}

/** `relay`: pass the event on, with `data` instead of the upstream's when set. */
export type StreamStep =
  { kind: 'relay'; event: string; data?: string } | { kind: 'skip' } | { kind: 'fail'; error: GatewayError };

/**
 * Follows an upstream event stream: which events to relay, the usage so far (message_start, then
 * the cumulative counts of each message_delta), and whether it ended properly with message_stop.
 * Every event is relayed as received but message_start, whose message names the caller's alias.
 */
export class AnthropicStreamReader {
  private usage: TokenUsage = noUsage;
  private stopped = false;

  /** `model`: the alias the caller asked for. */
  constructor(private readonly model: string) {}

  accept(event: { event?: string; data: string }): StreamStep {
    const name = event.event;
    // The SDKs drop events without a name; so do we, the proto needs one.
    if (name === undefined || name === '') return { kind: 'skip' };
    const relay: StreamStep = { kind: 'relay', event: name };
    switch (name) {
      case 'message_start': {
        const data = parseJson(event.data);
        if (!isJsonObject(data) || !isJsonObject(data.message)) return this.malformed();
        this.usage = mergeUsage(this.usage, data.message.usage);
        return {
          ...relay,
          data:
            withMessageModel(event.data, this.model) ??
            JSON.stringify({ ...data, message: { ...data.message, model: this.model } }),
        };
      }
      case 'message_delta': {
        const data = parseJson(event.data);
        if (!isJsonObject(data)) return this.malformed();
        this.usage = mergeUsage(this.usage, data.usage);
        return relay;
      }
      case 'message_stop':
        this.stopped = true;
        return relay;
      case 'error': {
        const reported = parseErrorBody(event.data);
        return { kind: 'fail', error: errorOfUpstreamEvent(reported.type, reported.message) };
      }
      default:
        return relay;
    }
  }

  /** The final usage once the body has ended; a failure when it ended before message_stop. */
  finish(): Result<TokenUsage> {
    if (!this.stopped) return err(gatewayError('api_error', 'The model service ended the stream early. Retry once.'));
    return ok(this.usage);
  }

  private malformed(): StreamStep {
    return { kind: 'fail', error: gatewayError('api_error', malformedUpstreamMessage) };
  }
}
