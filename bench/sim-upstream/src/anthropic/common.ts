import type { Directives } from '../directives';
import type { SimExchange } from '../exchange';
import { sendError } from './errors';

/** Options of the Anthropic protocol that apply to every request of a listener. */
export interface AnthropicSimOptions {
  /** When set, requests must carry it in `x-api-key`, as the real API demands a key. */
  apiKey?: string;
}

/**
 * Beta names the simulator knows, as the real API does (a sample of the published ones); any other
 * name in `anthropic-beta` is refused like there, so that a gateway that mangles or invents the
 * header is caught.
 */
export const knownBetas: readonly string[] = [
  'advanced-tool-use-2025-11-20',
  'claude-code-20250219',
  'computer-use-2024-10-22',
  'computer-use-2025-01-24',
  'context-1m-2025-08-07',
  'context-management-2025-06-27',
  'effort-2025-11-24',
  'extended-cache-ttl-2025-04-11',
  'files-api-2025-04-14',
  'fine-grained-tool-streaming-2025-05-14',
  'interleaved-thinking-2025-05-14',
  'message-batches-2024-09-24',
  'mid-conversation-system-2026-04-07',
  'oauth-2025-04-20',
  'output-128k-2025-02-19',
  'pdfs-2024-09-25',
  'prompt-caching-2024-07-31',
  'prompt-caching-scope-2026-01-05',
  'structured-outputs-2025-11-13',
  'thinking-token-count-2026-05-13',
  'token-counting-2024-11-01',
  'token-efficient-tools-2025-02-19',
];

/** The names in `anthropic-beta` (comma-separated, the header possibly repeated) the simulator does not know. */
function unknownBetasOf(header: string | string[] | undefined): string[] {
  if (header === undefined) return [];
  const names = (Array.isArray(header) ? header : [header]).flatMap((value) => value.split(','));
  return names.map((name) => name.trim()).filter((name) => name !== '' && !knownBetas.includes(name));
}

/**
 * The checks every endpoint of the protocol makes before reading the body's fields: the key (when
 * configured), `anthropic-version`, the names in `anthropic-beta`, a JSON body. The body's value when they pass; otherwise the
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
  const unknownBetas = unknownBetasOf(request.headers['anthropic-beta']);
  if (unknownBetas.length > 0) {
    sendError(
      response,
      requestId,
      400,
      `Unexpected value(s) \`${unknownBetas.join('`, `')}\` for the \`anthropic-beta\` header. Please consult our documentation at docs.anthropic.com or try again without the header.`,
    );
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
