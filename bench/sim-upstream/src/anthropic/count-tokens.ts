import { parseDirectives } from '../directives';
import type { SimExchange } from '../exchange';
import { sleep } from '../sleep';
import type { AnthropicSimOptions } from './common';
import { acceptRequest, sendRequestedError } from './common';
import { sendError } from './errors';
import { validateCountTokensRequest } from './request';

/**
 * `POST /v1/messages/count_tokens`: validates like the real API, then answers the same input-token
 * estimate `/v1/messages` reports in its usage, so that the two agree. Of the `sim:` texts,
 * `latency`, `error` (with `retry-after`) and `drop-after` apply; `pace` and `stream-error-after`
 * have nothing to act on and are ignored.
 */
export async function handleCountTokens(exchange: SimExchange, options: AnthropicSimOptions): Promise<void> {
  const { response, requestId } = exchange;
  const accepted = acceptRequest(exchange, options);
  if (!accepted.ok) return;
  const validation = validateCountTokensRequest(accepted.body);
  if (!validation.ok) {
    sendError(response, requestId, 400, validation.message);
    return;
  }
  const parsed = parseDirectives(validation.value.lastUserText);
  if (!parsed.ok) {
    sendError(response, requestId, 400, parsed.message);
    return;
  }
  const directives = parsed.value;
  if (!(await sleep(directives.latencyMs, exchange.signal))) return;
  if (directives.errorStatus !== undefined) {
    sendRequestedError(exchange, directives.errorStatus, directives);
    return;
  }
  if (directives.dropAfter !== undefined) {
    exchange.drop();
    return;
  }
  response.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId });
  response.end(JSON.stringify({ input_tokens: validation.value.inputTokens }));
}
