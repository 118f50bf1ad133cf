import { gatewayError } from '@gw/errors';
import type { GatewayError } from '@gw/errors';

/** How long a revocation is remembered for requests that passed auth just before it arrived. */
const recentRevocationMs = 30_000;

/** What a request presented, kept while it runs so that its key can be checked again (never logged). */
export interface PresentedCredentials {
  presentedKey: string;
  sourceAddress: string;
  requestId: string;
}

/** A key with requests in flight, as one of them presented it. */
export interface KeyInFlight {
  keyId: string;
  credentials: PresentedCredentials;
}

interface Registered {
  controller: AbortController;
  credentials: PresentedCredentials;
}

/**
 * The requests this ingress is serving, by key, so that a revocation ends them at once (docs/public-api.md, "Key states"):
 * each registered request holds a controller whose abort reason is the error to end it with.
 */
export class InFlightRequests {
  private readonly byKey = new Map<string, Set<Registered>>();
  private readonly revokedAt = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Registers a request; the returned signal aborts with a GatewayError when the key stops working. */
  register(keyId: string, credentials: PresentedCredentials): { signal: AbortSignal; unregister(): void } {
    const registered = { controller: new AbortController(), credentials };
    const revoked = this.revokedAt.get(keyId);
    if (revoked !== undefined && this.now() - revoked < recentRevocationMs) registered.controller.abort(revokedError());
    let requests = this.byKey.get(keyId);
    if (!requests) this.byKey.set(keyId, (requests = new Set()));
    requests.add(registered);
    return {
      signal: registered.controller.signal,
      unregister: () => {
        requests.delete(registered);
        if (requests.size === 0) this.byKey.delete(keyId);
      },
    };
  }

  /** Ends every request of the key; returns how many there were. */
  revokeKey(keyId: string): number {
    const now = this.now();
    this.revokedAt.set(keyId, now);
    for (const [id, at] of this.revokedAt) if (now - at >= recentRevocationMs) this.revokedAt.delete(id);
    return this.endKey(keyId, revokedError());
  }

  /** Ends every request of the key with the error given (a suspended account, an expired key). */
  endKey(keyId: string, error: GatewayError): number {
    const requests = this.byKey.get(keyId);
    if (!requests) return 0;
    for (const { controller } of requests) controller.abort(error);
    return requests.size;
  }

  /**
   * One request per key and source address among those in flight: what a re-verification asks auth
   * about (the allow-list is checked per address).
   */
  keysInFlight(): KeyInFlight[] {
    const found: KeyInFlight[] = [];
    for (const [keyId, requests] of this.byKey) {
      const addresses = new Set<string>();
      for (const { controller, credentials } of requests) {
        if (controller.signal.aborted || addresses.has(credentials.sourceAddress)) continue;
        addresses.add(credentials.sourceAddress);
        found.push({ keyId, credentials });
      }
    }
    return found;
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
