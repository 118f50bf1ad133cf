import { ok } from '@gw/errors';
import type { RateLimitWindow, Result } from '@gw/errors';
import type { RouterClient } from '../clients/router';
import { admit } from './admit';
import { authenticate } from './authenticate';
import { windowForRefusal } from './refuse';
import { reserve } from './reserve';
import type { AdmitDeps, CallerRequest, KeyVerifier, RefusalDeps, RequestLog, ReserveDeps } from './types';

/** What a token count needs: the stages it shares with a completion, and the router's count. */
export interface CountTokensDeps {
  keys: KeyVerifier;
  reserve: ReserveDeps;
  admit: AdmitDeps;
  refusal: RefusalDeps;
  router: Pick<RouterClient, 'countTokens'>;
  /** Deadline of a token count through the router (the upstream counts, or the router estimates). */
  countTokensTimeoutMs: number;
  log: RequestLog;
}

/**
 * POST /v1/messages/count_tokens: the stages of a completion up to admission (key, a concurrency slot
 * reserved before the body, then body, model, residency and the per-minute window), then the count from
 * the upstream or the router's estimate. Nothing is billed; the slot is released whatever ends the count.
 */
export async function handleCountTokens(
  deps: CountTokensDeps,
  request: CallerRequest,
  setRateLimit: (window: RateLimitWindow) => void,
): Promise<Result<{ input_tokens: number }>> {
  const verified = await authenticate(deps.keys, request);
  if (!verified.ok) return verified;
  const key = verified.value;
  const refuse = async (failure: Result<never>, reserved?: RateLimitWindow) => {
    if (failure.ok) return failure;
    const window = await windowForRefusal(deps.refusal, key, failure.error, request, reserved);
    if (window) setRateLimit(window);
    return failure;
  };
  const reserved = await reserve(deps.reserve.quota, key, request);
  if (!reserved.ok) {
    request.discardBody();
    return refuse(reserved);
  }
  const reservation = reserved.value;
  const lease = deps.reserve.leases.hold(reservation.lease, reservation.leaseTtlMs);
  try {
    const admitted = await admit(deps.admit, request, key, reservation, 'count_tokens');
    if (!admitted.ok) return await refuse(admitted, reservation.window);
    const admission = admitted.value;
    setRateLimit(admission.window);
    const counted = await deps.router.countTokens(
      {
        key,
        model: admission.model,
        pools: admission.pools,
        body: admission.body,
        layout: admission.layout,
        headers: request.protocolHeaders,
        query: request.query,
      },
      request,
      { signal: request.signal, timeoutMs: deps.countTokensTimeoutMs },
    );
    // The admitted window is in the headers already.
    if (!counted.ok) return counted;
    deps.log.request(request, {
      key_id: key.keyId,
      account_id: key.accountId,
      model: admission.model,
      status: 'ok',
      endpoint: 'count_tokens',
      pool_id: counted.value.poolId || undefined,
      estimated: counted.value.estimated,
    });
    return ok({ input_tokens: counted.value.inputTokens });
  } finally {
    lease.release(0n);
  }
}
