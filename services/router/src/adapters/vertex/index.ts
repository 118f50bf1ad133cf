import { isJsonObject } from '../../completion';
import type { UpstreamHttpRequest } from '../../upstream-http';
import { relayEvents, relayMessage } from '../anthropic';
import { acceptsContentType, inputTokensOfCount, parseErrorBody as parseAnthropicError } from '../anthropic/transform';
import { splitBetas } from '../betas';
import { providerBody } from '../raw-body';
import type { AdapterCall, CountTokensCall, UpstreamAdapter, UpstreamErrorBody } from '../types';
import type { VertexAdapterConfig } from './config';

export { vertexAdapterConfig } from './config';
export type { VertexAdapterConfig } from './config';

function modelsPath(config: VertexAdapterConfig): string {
  const project = encodeURIComponent(config.project);
  const location = encodeURIComponent(config.location);
  return `/v1/projects/${project}/locations/${location}/publishers/anthropic/models`;
}

function members(config: VertexAdapterConfig, call: CountTokensCall): [string, string][] {
  const { kept } = splitBetas(call.headers['anthropic-beta'], config.supportedBetas);
  const add: [string, string][] = [['anthropic_version', JSON.stringify(config.anthropicVersion)]];
  if (kept.length > 0) add.push(['anthropic_beta', JSON.stringify(kept)]);
  return add;
}

const headersOf = (call: CountTokensCall, accept: string) => ({
  'content-type': 'application/json',
  accept,
  'x-request-id': call.requestId,
});

/**
 * rawPredict (or streamRawPredict, with `"stream": true` in the body as Vertex wants it): the model in
 * the path, the body without `model`, with `anthropic_version` and the supported betas. The answer is
 * the Messages API's own (JSON, or the same SSE events).
 */
export function toRawPredictRequest(config: VertexAdapterConfig, call: AdapterCall): UpstreamHttpRequest {
  const add = members(config, call);
  if (call.stream) add.push(['stream', 'true']);
  const method = call.stream ? 'streamRawPredict' : 'rawPredict';
  return {
    url: `${call.endpointUrl}${modelsPath(config)}/${encodeURIComponent(call.upstreamModel)}:${method}`,
    headers: headersOf(call, call.stream ? 'text/event-stream' : 'application/json'),
    body: providerBody(call, add),
  };
}

/** Vertex's count-tokens method: the model goes in the body, as on the Anthropic API. */
export function toCountTokensRequest(config: VertexAdapterConfig, call: CountTokensCall): UpstreamHttpRequest {
  const add = members(config, call);
  add.push(['model', JSON.stringify(call.upstreamModel)]);
  return {
    url: `${call.endpointUrl}${modelsPath(config)}/count-tokens:rawPredict`,
    headers: headersOf(call, 'application/json'),
    body: providerBody(call, add),
  };
}

/** The Anthropic envelope the model sends, or Google's `{"error":{"code","message","status"}}`. */
export function parseErrorBody(text: string): UpstreamErrorBody {
  const anthropic = parseAnthropicError(text);
  if (anthropic.type !== undefined || anthropic.message !== undefined) return anthropic;
  try {
    const value = JSON.parse(text) as unknown;
    const error = isJsonObject(value) && isJsonObject(value.error) ? value.error : undefined;
    if (error === undefined) return {};
    return {
      type: typeof error.status === 'string' ? error.status : undefined,
      message: typeof error.message === 'string' ? error.message : undefined,
    };
  } catch {
    return {};
  }
}

/** Google Vertex AI's rawPredict protocol for Anthropic models, with its count-tokens method. */
export function createVertexAdapter(config: VertexAdapterConfig): UpstreamAdapter {
  return {
    buildRequest: (call) => toRawPredictRequest(config, call),
    acceptsContentType,
    parseErrorBody,
    relay: (body, call) => (call.stream ? relayEvents(body, call.model) : relayMessage(body, call.model)),
    countTokens: {
      buildRequest: (call) => toCountTokensRequest(config, call),
      acceptsContentType: (contentType) => acceptsContentType(contentType, false),
      parseCount: inputTokensOfCount,
    },
    droppedBetas: (headers) => splitBetas(headers['anthropic-beta'], config.supportedBetas).dropped,
    provider: 'vertex',
  };
}
