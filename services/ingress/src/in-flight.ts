import { gatewayError } from '@gw/errors';
import type { GatewayError } from '@gw/errors';

/** How long a revocation is remembered for requests that passed auth just before it arrived. */
const recentRevocationMs = 30_000;

/**
 * The requests this ingress is serving, by key, so that a revocation ends them at once (spec §3.1):
 * each registered request holds a controller whose abort reason is the error to end it with.
 */
export class InFlightRequests {
  private readonly byKey = new Map<string, Set<AbortController>>();
  private readonly revokedAt = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Registers a request; the returned signal aborts with a GatewayError when the key stops working. */
  register(keyId: string): { signal: AbortSignal; unregister(): void } {
    const controller = new AbortController();
    const revoked = this.revokedAt.get(keyId);
    if (revoked !== undefined && this.now() - revoked < recentRevocationMs) controller.abort(revokedError());
    let requests = this.byKey.get(keyId);
    if (!requests) this.byKey.set(keyId, (requests = new Set()));
    requests.add(controller);
    return {
      signal: controller.signal,
      unregister: () => {
        requests.delete(controller);
        if (requests.size === 0) this.byKey.delete(keyId);
      },
    };
  }

  /** Ends every request of the key; returns how many there were. */
  revokeKey(keyId: string): number {
    const now = this.now();
    this.revokedAt.set(keyId, now);
    for (const [id, at] of this.revokedAt) if (now - at >= recentRevocationMs) this.revokedAt.delete(id);
    const requests = this.byKey.get(keyId);
    if (!requests) return 0;
    for (const controller of requests) controller.abort(revokedError());
    return requests.size;
  }

  count(): number {
    let total = 0;
    for (const requests of this.byKey.values()) total += requests.size;
    return total;
  }
}

export function revokedError(): GatewayError {
  return gatewayError(
    'authentication_error',
    'The API key was revoked while this request was in flight. Use an active key; send it as a bearer token in the "Authorization" header or in the "x-api-key" header.',
  );
}

export function expiredError(): GatewayError {
  return gatewayError(
    'authentication_error',
    'The API key expired while this request was in flight. Use an active key; send it as a bearer token in the "Authorization" header or in the "x-api-key" header.',
  );
}
