import type { RateLimitWindow } from '@gw/errors';

/** The numbers in force for an account: its plan's, with the account's overrides. */
export interface AccountLimits {
  requestsPerMinute: number;
  concurrency: number;
  monthlyTokens: number;
  overage: boolean;
}

/** A concurrency lease quota holds, how long it lives without a renewal, and the window it saw. */
export interface Lease {
  leaseId: string;
  leaseTtlMs: number;
  window: RateLimitWindow;
}

/** An admitted request's lease, window (counted) and the limits the decision used. */
export interface Admitted extends Lease {
  limits: AccountLimits | undefined;
}

/** Where an account stands, charging nothing. */
export interface Standing {
  window: RateLimitWindow;
  limits: AccountLimits;
}
