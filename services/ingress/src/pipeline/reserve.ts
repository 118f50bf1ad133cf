import { ok } from '@gw/errors';
import type { RateLimitWindow, Result } from '@gw/errors';
import type { VerifiedKey } from '../domain/key';
import type { LeaseRef } from '../domain/leases';
import type { ReserveDeps, RequestScope } from './types';

/** A concurrency slot held for a verified request, from before its body is read. */
export interface Reservation {
  lease: LeaseRef;
  /** How long quota keeps the lease after each renewal. */
  leaseTtlMs: number;
  /** The per-minute window as the reservation found it (not charged): the headers of a later refusal. */
  window: RateLimitWindow;
}

/**
 * Stage 2, right after the key verified: the request takes one of its account's concurrent slots
 * (429 when none is free) before anything of its body is read, so that uploads still arriving count
 * against the limit. Nothing else is charged: a request refused later for its body, model or policy
 * consumes no per-minute slot and no allowance.
 */
export async function reserve(
  quota: ReserveDeps['quota'],
  key: VerifiedKey,
  scope: RequestScope,
): Promise<Result<Reservation>> {
  const reserved = await quota.reserve(key, scope);
  if (!reserved.ok) return reserved;
  return ok({
    lease: { accountId: key.accountId, environment: key.environment, leaseId: reserved.value.leaseId },
    leaseTtlMs: reserved.value.leaseTtlMs,
    window: reserved.value.window,
  });
}
