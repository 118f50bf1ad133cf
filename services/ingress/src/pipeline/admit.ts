import { err, gatewayError, ok } from '@gw/errors';
import type { RateLimitWindow, Result } from '@gw/errors';
import { commonv1 } from '@gw/proto';
import type { TopLevelLayout } from '@gw/json-layout';
import type { BodyKind } from '../body-checks/body-checks';
import type { AccountLimits } from '../domain/limits';
import type { Authorization } from '../domain/authorization';
import { isLive } from '../domain/key';
import type { VerifiedKey } from '../domain/key';
import type { LeaseRef } from '../domain/leases';
import type { Restoration } from '../domain/restoration';
import { isJsonContentType } from '../domain/validation';
import type { Reservation } from './reserve';
import type { AdmitDeps, CallerRequest } from './types';

/** What an admitted request carries on: everything checked and charged. */
export interface Admission {
  key: VerifiedKey;
  model: string;
  streamed: boolean;
  /** Live keys are billed; test keys are served by the stub at cost 0. */
  live: boolean;
  /** The input tokens billed when the request ends before the upstream reports usage (@gw/usage). */
  inputEstimate: number;
  /** The caller's `max_tokens`: the most output the request may be billed (its provisional usage record). */
  maxTokens: number;
  /** The body to send upstream: the caller's, or the one the privacy mode produced. */
  body: Uint8Array;
  /** Where `body`'s top-level members are; undefined when the privacy mode produced the body. */
  layout: TopLevelLayout | undefined;
  pools: Authorization['pools'];
  /** The concurrency lease the request holds, and how long quota keeps it after each renewal. */
  lease: LeaseRef;
  leaseTtlMs: number;
  /** The per-minute window, this request counted in it. */
  window: RateLimitWindow;
  limits: AccountLimits | undefined;
  /** Mode `tokenise`: how to put the originals back into the completion. */
  restoration: Restoration | undefined;
  /** Mode `flag`: entity counts by type. */
  privacyFlags: Record<string, number> | undefined;
}

export const billingUnavailableError = () =>
  gatewayError('overloaded_error', 'The gateway cannot record usage right now. Retry with exponential backoff.', {
    retryAfterMs: 5_000,
  });

export const notJsonError = () =>
  gatewayError('invalid_request_error', 'Content-Type must be application/json; the body is JSON.');

/**
 * Stage 3, for a verified key: media type and body (413/400), policy (404/403/422), billing
 * availability for what is billed (503), then the limits (429), in that order. Nothing is sent upstream
 * and no per-minute slot or allowance is consumed until every check has passed. With a reservation,
 * Acquire charges that lease, and the caller releases it after any refusal (quota has freed it already
 * when it refused the Acquire itself, but a lost reply leaves that unknown); without one (the upload had
 * all arrived when the key was verified), Acquire takes the concurrency slot together with the rest, in
 * one round trip. A token count (`count_tokens`) passes the same checks and is never billed.
 */
export async function admit(
  deps: AdmitDeps,
  request: CallerRequest,
  key: VerifiedKey,
  reservation: Reservation | undefined,
  kind: BodyKind = 'messages',
): Promise<Result<Admission>> {
  if (!isJsonContentType(request.contentType)) {
    request.discardBody();
    return err(notJsonError());
  }
  const raw = await request.readBody(deps.bodyLimitFor(key.plan));
  if (!raw.ok) return raw;
  const body = await deps.checkBody(kind, raw.value, key.accountId);
  if (!body.ok) return body;
  const { model } = body.value;

  const authorized = await deps.authorize(key, model, raw.value, request);
  if (!authorized.ok) return authorized;
  const live = isLive(key);
  // Never serve what cannot be billed: refuse until usage can be recorded again.
  if (kind === 'messages' && live && deps.billingUnavailable()) return err(billingUnavailableError());

  const admitted = await deps.quota.acquire(key, reservation?.lease.leaseId, request);
  if (!admitted.ok) return admitted;
  const decision = authorized.value;
  return ok({
    key,
    model,
    streamed: body.value.stream,
    live,
    inputEstimate: body.value.inputEstimate,
    maxTokens: body.value.maxTokens,
    body: decision.body ?? raw.value,
    layout: decision.body === undefined ? body.value.layout : undefined,
    pools: decision.pools,
    lease: reservation?.lease ?? {
      accountId: key.accountId,
      environment: key.environment,
      leaseId: admitted.value.leaseId,
    },
    leaseTtlMs: reservation?.leaseTtlMs ?? admitted.value.leaseTtlMs,
    window: admitted.value.window,
    limits: admitted.value.limits,
    restoration:
      decision.placeholders.length > 0
        ? deps.restorationFor(decision.placeholders, decision.placeholderNonce)
        : undefined,
    privacyFlags: key.privacyMode === commonv1.PrivacyMode.FLAG ? decision.privacyFlags : undefined,
  });
}
