import type { RateLimitWindow } from '@gw/errors';

/** The rate-limit headers the upstream's SDKs read, under the configured vendor prefix. */
export function rateLimitHeaders(prefix: string, window: RateLimitWindow): Record<string, string> {
  return {
    [`${prefix}-ratelimit-requests-limit`]: String(window.limit),
    [`${prefix}-ratelimit-requests-remaining`]: String(window.remaining),
    [`${prefix}-ratelimit-requests-reset`]: new Date(window.resetUnixMs).toISOString().replace('Z', '+00:00'),
  };
}
