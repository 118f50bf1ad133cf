import { gatewayError, isErrorType } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import { isJsonObject } from '../../completion';
import { errorOfUpstreamEvent } from '../../upstream-errors';
import type { UpstreamErrorBody } from '../types';

/** What an OpenAI-compatible server says went wrong, in any of the shapes they use. */
export interface ChatUpstreamError {
  type?: string;
  message?: string;
  /** A status (vLLM puts the HTTP status here) or a string code (`rate_limit_exceeded`). */
  code?: string | number;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * The error a parsed body carries, or undefined when it carries none:
 * `{"error":{"message","type","code"}}` (OpenAI, vLLM, llama.cpp, Ollama, Azure),
 * `{"error":"…","error_type":"…"}` (TGI) or `{"object":"error","message","type","code"}` (older vLLM).
 */
export function upstreamErrorOf(value: unknown): ChatUpstreamError | undefined {
  if (!isJsonObject(value)) return undefined;
  const code = (raw: unknown) => (typeof raw === 'number' || typeof raw === 'string' ? raw : undefined);
  if (isJsonObject(value.error)) {
    const error = value.error;
    return { type: text(error.type), message: text(error.message), code: code(error.code) };
  }
  if (typeof value.error === 'string') return { type: text(value.error_type), message: text(value.error) };
  if (value.object === 'error') return { type: text(value.type), message: text(value.message), code: code(value.code) };
  return undefined;
}

/** For the router's status mapping (upstream-errors.ts): the type for logs, the message for 400/422. */
export function parseErrorBody(body: string): UpstreamErrorBody {
  let value: unknown;
  try {
    value = JSON.parse(body) as unknown;
  } catch {
    return {};
  }
  const error = upstreamErrorOf(value);
  return error === undefined ? {} : { type: error.type, message: error.message };
}

const saturatedStatuses = new Set([429, 503, 529]);

/**
 * An error reported in a 200 (mid-stream, or as the whole body): its type when the catalogue knows
 * it, overloaded_error when its status says saturated, else api_error, with the upstream's message.
 */
export function errorOfInBandError(error: ChatUpstreamError): GatewayError {
  if (error.type !== undefined && isErrorType(error.type)) return errorOfUpstreamEvent(error.type, error.message);
  const status = Number(error.code);
  if (saturatedStatuses.has(status)) {
    return gatewayError('overloaded_error', error.message ?? 'The model service is overloaded. Retry later.');
  }
  return errorOfUpstreamEvent(undefined, error.message);
}
