import type { Directives } from '../directives';
import type { SimExchange } from '../exchange';
import { sendError } from './errors';

/** Options of the Anthropic protocol that apply to every request of a listener. */
export interface AnthropicSimOptions {
  /** When set, requests must carry it in `x-api-key`, as the real API demands a key. */
  apiKey?: string;
}

/**
 * The checks every endpoint of the protocol makes before reading the body's fields: the key (when
 * configured), `anthropic-version`, a JSON body. The body's value when they pass; otherwise the
 * error has been sent.
 */
export function acceptRequest(
  exchange: SimExchange,
  options: AnthropicSimOptions,
): { ok: true; body: unknown } | { ok: false } {
  const { request, response, requestId } = exchange;
  if (options.apiKey !== undefined && request.headers['x-api-key'] !== options.apiKey) {
    sendError(response, requestId, 401, 'invalid x-api-key');
    return { ok: false };
  }
  if (request.headers['anthropic-version'] === undefined) {
    sendError(response, requestId, 400, 'anthropic-version: header is required');
    return { ok: false };
  }
  if (exchange.body.kind !== 'json') {
    sendError(response, requestId, 400, 'There was an issue with the request body: it is not valid JSON.');
    return { ok: false };
  }
  return { ok: true, body: exchange.body.value };
}

/** `sim:error=<status>` (with `sim:retry-after`): the error envelope instead of an answer. */
export function sendRequestedError(exchange: SimExchange, status: number, directives: Directives): void {
  const retryAfter: Record<string, string> =
    directives.retryAfterSeconds === undefined ? {} : { 'retry-after': String(directives.retryAfterSeconds) };
  sendError(exchange.response, exchange.requestId, status, `sim: error status ${status} on request`, retryAfter);
}
