/**
 * Misbehaviour on request: `sim:<name>=<integer>` anywhere in the last user message. The names are
 * the same for every protocol; see README.md.
 */
export interface Directives {
  /** Delay before the response headers, in ms. */
  latencyMs: number;
  /** Delay between streamed deltas, in ms (non-streamed: the sum is added to the latency). */
  paceMs: number;
  /** Answer with this HTTP status and the protocol's error envelope instead of a completion. */
  errorStatus?: number;
  /** `retry-after` seconds to send with an error status. */
  retryAfterSeconds?: number;
  /** Send this many deltas, then an SSE error event. */
  streamErrorAfter?: number;
  /** Send this many deltas, then destroy the socket. */
  dropAfter?: number;
  /** Input tokens to report as read from the prompt cache. */
  cacheReadTokens: number;
  /** Input tokens to report as written to the prompt cache. */
  cacheWriteTokens: number;
}

const directivePattern = /\bsim:([a-z-]+)=(\d+)\b/g;

const directiveNames = [
  'latency',
  'pace',
  'error',
  'retry-after',
  'stream-error-after',
  'drop-after',
  'cache-read',
  'cache-write',
] as const;
type DirectiveName = (typeof directiveNames)[number];

function isDirectiveName(name: string): name is DirectiveName {
  return (directiveNames as readonly string[]).includes(name);
}

/** The directives in a text, or the message for a 400 when one is unknown or out of range. */
export function parseDirectives(text: string): { ok: true; value: Directives } | { ok: false; message: string } {
  const directives: Directives = { latencyMs: 0, paceMs: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
  for (const [whole, name, digits] of text.matchAll(directivePattern)) {
    if (name === undefined || digits === undefined) continue;
    if (!isDirectiveName(name)) {
      return { ok: false, message: `sim: unknown directive "${whole}"; known: ${directiveNames.join(', ')}` };
    }
    const value = Number(digits);
    switch (name) {
      case 'latency':
        directives.latencyMs = value;
        break;
      case 'pace':
        directives.paceMs = value;
        break;
      case 'error':
        if (value < 400 || value > 599) return { ok: false, message: `sim: "${whole}" needs a status from 400 to 599` };
        directives.errorStatus = value;
        break;
      case 'retry-after':
        directives.retryAfterSeconds = value;
        break;
      case 'stream-error-after':
        directives.streamErrorAfter = value;
        break;
      case 'drop-after':
        directives.dropAfter = value;
        break;
      case 'cache-read':
        directives.cacheReadTokens = value;
        break;
      case 'cache-write':
        directives.cacheWriteTokens = value;
        break;
    }
  }
  return { ok: true, value: directives };
}
