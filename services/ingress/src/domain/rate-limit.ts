import type { GatewayError, RateLimitWindow } from '@gw/errors';
import type { commonv1 } from '@gw/proto';
import type { Clients } from '../clients';
import { callScope } from '../pipeline/types';
import type { RequestScope } from '../pipeline/types';

export function windowOf(message: { limit: bigint; remaining: bigint; resetUnixMs: bigint }): RateLimitWindow {
  return {
    limit: Number(message.limit),
    remaining: Number(message.remaining),
    resetUnixMs: Number(message.resetUnixMs),
  };
}

/**
 * The caller's window for a response that was not admitted by the limits: the one a limits refusal
 * carries, else the one its reservation read (while that window is still current), else a look that
 * charges nothing. Undefined when the limits cannot be reached.
 */
export async function windowForRefusal(
  quota: Pick<Clients['quota'], 'peek'>,
  key: commonv1.KeyContext,
  error: GatewayError,
  scope: RequestScope,
  reserved?: RateLimitWindow,
): Promise<RateLimitWindow | undefined> {
  if (error.rateLimit) return error.rateLimit;
  // A slow upload may outlast the minute its reservation saw; then only a look tells the new one.
  if (reserved && reserved.resetUnixMs > Date.now()) return reserved;
  const peeked = await quota.peek({ key }, callScope(scope));
  return peeked.ok && peeked.value.window ? windowOf(peeked.value.window) : undefined;
}

/** The rate-limit headers of spec §8.1, under the configured vendor prefix. */
export function rateLimitHeaders(prefix: string, window: RateLimitWindow): Record<string, string> {
  return {
    [`${prefix}-ratelimit-requests-limit`]: String(window.limit),
    [`${prefix}-ratelimit-requests-remaining`]: String(window.remaining),
    [`${prefix}-ratelimit-requests-reset`]: new Date(window.resetUnixMs).toISOString().replace('Z', '+00:00'),
  };
}
