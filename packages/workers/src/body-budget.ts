import { gatewayError } from '@gw/errors';

/** A retryable refusal: the bodies other requests hold will be given back as those requests end. */
export function tooManyBodies() {
  return gatewayError(
    'overloaded_error',
    'The gateway is holding too many request bodies right now. Retry with exponential backoff.',
    { retryAfterMs: 5_000 },
  );
}

/**
 * The bytes of request bodies that all requests of this process hold in memory, and the most they may
 * hold. Each request takes its share through a BodyReservation, which gives it all back at once.
 */
export class BodyBudget {
  private held = 0;

  constructor(readonly maxBytes: number) {}

  get heldBytes(): number {
    return this.held;
  }

  /** An empty share for one request. */
  reservation(): BodyReservation {
    let taken = 0;
    return {
      take: (bytes) => {
        if (this.held + bytes > this.maxBytes) return false;
        this.held += bytes;
        taken += bytes;
        return true;
      },
      release: () => {
        this.held -= taken;
        taken = 0;
      },
    };
  }
}

/** One request's share of a BodyBudget. */
export interface BodyReservation {
  /** Takes `bytes` more; false, taking nothing, when that would pass the budget's cap. */
  take(bytes: number): boolean;
  /** Gives back everything taken; safe to call again. */
  release(): void;
}

/**
 * The gauge of what a budget holds, in the words of every service that holds bodies (ingress, the router):
 * spread into prom-client's `new Gauge({ ...heldBodyBytesGauge(budget), registers })`, read at each scrape.
 */
export function heldBodyBytesGauge(budget: BodyBudget) {
  return {
    name: 'gateway_request_body_bytes',
    help: 'Bytes of request bodies held in memory (declared lengths reserved whole), against BODY_BUFFER_MAX_BYTES.',
    collect(this: { set(value: number): void }) {
      this.set(budget.heldBytes);
    },
  };
}
