/**
 * The circuit breaker of one upstream endpoint (passive outlier ejection). Pure state over an
 * injected clock: no timers, the state is read at the time of asking.
 *
 * - **closed**: requests flow; `failureThreshold` consecutive failures eject the endpoint.
 * - **open** (ejected): no requests, for an ejection time that doubles with each ejection of a
 *   streak (`baseEjectionMs`, ×2, … up to `maxEjectionMs`). A streak ends once the endpoint has
 *   stayed closed for `maxEjectionMs`.
 * - **half-open**: the ejection time is over; one trial request may go. Its success closes the
 *   breaker, its failure ejects again (next step of the streak).
 *
 * A successful health probe closes the breaker from any state. A failed probe counts as one
 * failure when closed, fails the trial slot when half-open (no trial running), and is ignored while
 * open.
 */

export interface BreakerSettings {
  /** Consecutive failures that eject a closed endpoint. */
  failureThreshold: number;
  /** The first ejection of a streak. */
  baseEjectionMs: number;
  /** The longest ejection; also how long an endpoint must stay closed to end a streak. */
  maxEjectionMs: number;
}

export const defaultBreakerSettings: BreakerSettings = {
  failureThreshold: 5,
  baseEjectionMs: 5_000,
  maxEjectionMs: 60_000,
};

export type BreakerState = 'closed' | 'open' | 'half_open';

/**
 * What an attempt was allowed as: an ordinary request, the one trial of a half-open breaker, or a
 * last resort sent to an ejected endpoint because every other one is ejected too.
 */
export interface BreakerTicket {
  readonly trial: boolean;
  readonly lastResort?: boolean;
}

/** A change of state worth a log line and a metric. */
export type BreakerTransition =
  | {
      kind: 'ejected';
      /** Consecutive failures while closed, a failed half-open trial, or a failed probe when half-open. */
      cause: 'failures' | 'trial' | 'probe';
      ejectionMs: number;
      /** Ejections in the current streak, this one included. */
      streak: number;
    }
  | { kind: 'closed' };

export type Clock = () => number;

export class CircuitBreaker {
  private consecutiveFailures = 0;
  /** Ejections in the current streak. */
  private streak = 0;
  /** Set while ejected (open, then half-open once the time has come). */
  private ejectedUntil: number | undefined;
  private trialRunning = false;
  private closedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly settings: BreakerSettings,
    private readonly now: Clock,
  ) {}

  state(): BreakerState {
    if (this.ejectedUntil === undefined) return 'closed';
    return this.now() < this.ejectedUntil ? 'open' : 'half_open';
  }

  /** Whether a request may go now: closed, or half-open with no trial running. */
  available(): boolean {
    const state = this.state();
    return state === 'closed' || (state === 'half_open' && !this.trialRunning);
  }

  /** Lets one request go (call only when `available()`); when half-open, it becomes the trial. */
  admit(): BreakerTicket {
    if (this.state() === 'half_open' && !this.trialRunning) {
      this.trialRunning = true;
      return { trial: true };
    }
    return { trial: false };
  }

  /**
   * Lets one request go whatever the state: the last resort when every endpoint is ejected. Its
   * success re-admits the endpoint; its failure changes nothing (the endpoint is ejected already).
   */
  admitAnyway(): BreakerTicket {
    return this.available() ? this.admit() : { trial: false, lastResort: true };
  }

  /** The endpoint answered (anything but 429 or 5xx). */
  succeeded(ticket: BreakerTicket): BreakerTransition | undefined {
    if ((ticket.trial && this.trialRunning) || (ticket.lastResort && this.state() !== 'closed')) {
      this.trialRunning = false;
      return this.close();
    }
    if (this.state() === 'closed') this.consecutiveFailures = 0;
    return undefined;
  }

  /** The endpoint failed: connection refused or reset, no headers in time, 429 or 5xx. */
  failed(ticket: BreakerTicket): BreakerTransition | undefined {
    if (ticket.trial && this.trialRunning) {
      this.trialRunning = false;
      return this.eject('trial');
    }
    if (this.state() !== 'closed') return undefined;
    this.consecutiveFailures += 1;
    return this.consecutiveFailures >= this.settings.failureThreshold ? this.eject('failures') : undefined;
  }

  /** The attempt says nothing about the endpoint (the caller went away): a trial slot is freed. */
  abandoned(ticket: BreakerTicket): void {
    if (ticket.trial) this.trialRunning = false;
  }

  probeSucceeded(): BreakerTransition | undefined {
    this.trialRunning = false;
    if (this.ejectedUntil === undefined) {
      this.consecutiveFailures = 0;
      return undefined;
    }
    return this.close();
  }

  probeFailed(): BreakerTransition | undefined {
    switch (this.state()) {
      case 'closed':
        return this.failed({ trial: false });
      case 'half_open':
        return this.trialRunning ? undefined : this.eject('probe');
      case 'open':
        return undefined;
    }
  }

  private close(): BreakerTransition {
    this.ejectedUntil = undefined;
    this.trialRunning = false;
    this.consecutiveFailures = 0;
    this.closedAt = this.now();
    return { kind: 'closed' };
  }

  private eject(cause: 'failures' | 'trial' | 'probe'): BreakerTransition {
    const now = this.now();
    const wasClosed = this.ejectedUntil === undefined;
    if (wasClosed && now - this.closedAt >= this.settings.maxEjectionMs) this.streak = 0;
    const ejectionMs = Math.min(this.settings.baseEjectionMs * 2 ** this.streak, this.settings.maxEjectionMs);
    this.streak += 1;
    this.ejectedUntil = now + ejectionMs;
    this.consecutiveFailures = 0;
    return { kind: 'ejected', cause, ejectionMs, streak: this.streak };
  }
}
