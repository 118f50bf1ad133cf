import type { UpstreamHttpRequest } from '../../upstream-http';
import type { AdapterCall } from '../types';
import type { OpenAIAdapterConfig } from './config';
import type { ChatCompletionRequest } from './wire';

/** `{endpoint}/v1/chat/completions`, with `?api-version=` when the config names one (Azure). */
export function chatCompletionsUrl(config: OpenAIAdapterConfig, endpointUrl: string): string {
  const url = `${endpointUrl}${config.chatCompletionsPath}`;
  return config.apiVersion === undefined ? url : `${url}?api-version=${encodeURIComponent(config.apiVersion)}`;
}

/**
 * The headers of a call: JSON, what the call accepts back, the request id, and the pool's
 * credential as `Authorization: Bearer` or Azure's `api-key`. No caller header is passed on: the
 * Anthropic ones mean nothing to this protocol.
 */
export function upstreamHeaders(
  config: OpenAIAdapterConfig,
  call: Pick<AdapterCall, 'credential' | 'requestId' | 'stream'>,
): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: call.stream ? 'text/event-stream' : 'application/json',
    'x-request-id': call.requestId,
  };
  if (call.credential !== undefined) {
    if (config.credentialStyle === 'api-key') headers['api-key'] = call.credential;
    else headers.authorization = `Bearer ${call.credential}`;
  }
  return headers;
}

export function upstreamRequest(
  config: OpenAIAdapterConfig,
  call: AdapterCall,
  body: ChatCompletionRequest,
): UpstreamHttpRequest {
  return {
    url: chatCompletionsUrl(config, call.endpointUrl),
    headers: upstreamHeaders(config, call),
    body: JSON.stringify(body),
  };
}

/** A streamed answer is `text/event-stream`, a whole one `application/json`. */
export function acceptsContentType(contentType: string | undefined, stream: boolean): boolean {
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase();
  return stream ? mediaType === 'text/event-stream' : mediaType === 'application/json';
}
