import type { GatewayError, Result } from '@gw/errors';
import type { commonv1 } from '@gw/proto';

/** Names one concurrency lease held in quota. */
export interface LeaseRef {
  accountId: string;
  environment: commonv1.Environment;
  leaseId: string;
}

/** The two quota calls a lease needs once it is reserved. */
export interface LeaseCalls {
  renew(ref: LeaseRef): Promise<Result<{ held: boolean }>>;
  release(ref: LeaseRef & { billableTokens: bigint }): Promise<Result<unknown>>;
}

export interface LeaseEvents {
  /** Quota no longer knew a lease while its request was still running (expired during an outage). */
  leaseLost(ref: LeaseRef): void;
  /** A release that failed once and is being retried. */
  releaseRetrying(ref: LeaseRef, attempt: number, error: GatewayError): void;
  /** A release given up after every retry: its tokens did not reach the allowance counter. */
  releaseAbandoned(ref: LeaseRef, billableTokens: bigint, error: GatewayError): void;
}

export interface LeaseKeeperOptions {
  /** How often due renewals are looked for. */
  sweepEveryMs?: number;
  /** First pause before retrying a failed release, doubled each time up to maxRetryPauseMs. */
  firstRetryPauseMs?: number;
  maxRetryPauseMs?: number;
  /**
   * How long a failed release is retried. Quota charges a lease's tokens once however often its
   * release arrives, so retrying is always safe; past this the request's usage event (durable, in
   * metering) is the only record and the loss is reported.
   */
  retryForMs?: number;
  now?: () => number;
}

interface Held {
  ref: LeaseRef;
  /** A third of the lease's time to live in quota. */
  renewEveryMs: number;
  renewedAt: number;
  lost: boolean;
}

/**
 * Keeps the concurrency leases of this ingress's requests alive with one timer for all of them (a
 * request needs none of its own), from the reservation on, while a body may still be arriving, and
 * releases them with retries so that no request's tokens silently miss the allowance counter.
 */
export class LeaseKeeper {
  private readonly held = new Set<Held>();
  private readonly renewal: NodeJS.Timeout;
  /** Releases waiting for their next attempt, with the failure of the last one. */
  private readonly retries = new Map<
    NodeJS.Timeout,
    { request: LeaseRef & { billableTokens: bigint }; error: GatewayError }
  >();
  private readonly now: () => number;
  private readonly firstRetryPauseMs: number;
  private readonly maxRetryPauseMs: number;
  private readonly retryForMs: number;

  constructor(
    private readonly calls: LeaseCalls,
    private readonly events: LeaseEvents,
    options: LeaseKeeperOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.firstRetryPauseMs = options.firstRetryPauseMs ?? 100;
    this.maxRetryPauseMs = options.maxRetryPauseMs ?? 5_000;
    this.retryForMs = options.retryForMs ?? 110_000;
    this.renewal = setInterval(() => this.renewDue(), options.sweepEveryMs ?? 1_000);
    this.renewal.unref();
  }

  /**
   * Starts keeping a lease that quota holds for ttlMs after each renewal; the returned function
   * releases it (once) with the request's tokens.
   */
  hold(ref: LeaseRef, ttlMs: number): { release(billableTokens: bigint): void } {
    const held: Held = {
      ref,
      renewEveryMs: Math.max(1_000, Math.floor(ttlMs / 3)),
      renewedAt: this.now(),
      lost: false,
    };
    this.held.add(held);
    let released = false;
    return {
      release: (billableTokens) => {
        if (released) return;
        released = true;
        this.held.delete(held);
        void this.release({ ...ref, billableTokens }, 1, this.now());
      },
    };
  }

  /** Leases currently kept. */
  count(): number {
    return this.held.size;
  }

  /** Releases still being retried. */
  pendingReleases(): number {
    return this.retries.size;
  }

  /** Stops renewing; releases still waiting for a retry are given up and reported, never dropped unsaid. */
  close(): void {
    clearInterval(this.renewal);
    for (const [retry, { request, error }] of this.retries) {
      clearTimeout(retry);
      this.events.releaseAbandoned(request, request.billableTokens, error);
    }
    this.retries.clear();
  }

  /** Renews every lease old enough to need it; a lease quota no longer holds is reported once. */
  renewDue(): void {
    const now = this.now();
    for (const held of this.held) {
      if (held.lost || now - held.renewedAt < held.renewEveryMs) continue;
      held.renewedAt = now;
      void this.calls.renew(held.ref).then((renewed) => {
        if (renewed.ok && !renewed.value.held && !held.lost && this.held.has(held)) {
          // The request goes on (it is billed at its release whatever happened to the lease); quota
          // just stopped counting it against the account's concurrency.
          held.lost = true;
          this.events.leaseLost(held.ref);
        }
      });
    }
  }

  private async release(request: LeaseRef & { billableTokens: bigint }, attempt: number, firstAt: number) {
    const released = await this.calls.release(request);
    if (released.ok) return;
    const pause = Math.min(this.maxRetryPauseMs, this.firstRetryPauseMs * 2 ** (attempt - 1));
    if (this.now() + pause - firstAt > this.retryForMs) {
      this.events.releaseAbandoned(request, request.billableTokens, released.error);
      return;
    }
    this.events.releaseRetrying(request, attempt, released.error);
    const retry = setTimeout(() => {
      this.retries.delete(retry);
      void this.release(request, attempt + 1, firstAt);
    }, pause);
    retry.unref();
    this.retries.set(retry, { request, error: released.error });
  }
}
