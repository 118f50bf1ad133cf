import type { GatewayError, RateLimitWindow } from '@gw/errors';
import type { VerifiedKey } from '../domain/key';
import type { RefusalDeps, RequestScope, ResponseSink } from './types';

/**
 * The caller's window for a response that was not admitted by the limits: the one a limits refusal
 * carries, else the one its reservation read (while that window is still current), else a look that
 * charges nothing. Undefined when the limits cannot be reached.
 */
export async function windowForRefusal(
  deps: RefusalDeps,
  key: VerifiedKey,
  error: GatewayError,
  scope: RequestScope,
  reserved?: RateLimitWindow,
): Promise<RateLimitWindow | undefined> {
  if (error.rateLimit) return error.rateLimit;
  // A slow upload may outlast the minute its reservation saw; then only a look tells the new one.
  if (reserved && reserved.resetUnixMs > Date.now()) return reserved;
  const peeked = await deps.quota.peek(key, scope);
  return peeked.ok ? peeked.value.window : undefined;
}

/**
 * Every answer to a verified key says where the caller stands in its per-minute window: the window a
 * limits refusal carries, the one its reservation read, or a look that charges nothing.
 */
export async function refuseVerified(
  deps: RefusalDeps,
  sink: Pick<ResponseSink, 'setRateLimit' | 'fail'>,
  key: VerifiedKey,
  error: GatewayError,
  scope: RequestScope,
  reservedWindow?: RateLimitWindow,
): Promise<void> {
  const window = await windowForRefusal(deps, key, error, scope, reservedWindow);
  if (window) sink.setRateLimit(window);
  sink.fail(error);
}
