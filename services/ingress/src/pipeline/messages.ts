import { gatewayError, internalErrorMessage } from '@gw/errors';
import type { GatewayError, RateLimitWindow } from '@gw/errors';
import type { commonv1 } from '@gw/proto';
import { admit } from './admit';
import { authenticate } from './authenticate';
import { newRelayState, relay } from './relay';
import { reserve } from './reserve';
import type { Reservation } from './reserve';
import { settle } from './settle';
import type { Admission } from './admit';
import type { CallerRequest, MessagesDeps, RequestScope, ResponseSink } from './types';
import { windowForRefusal } from '../domain/rate-limit';
import { isJsonContentType } from '../domain/validation';

type HeldLease = ReturnType<MessagesDeps['leases']['hold']>;

export type { CallerRequest, MessagesDeps, ResponseSink, UsageEventInit } from './types';

/** `x-privacy-flags`: counts by entity type, never values, e.g. `EMAIL=2,PHONE=1`, or `none`. */
export function privacyFlagsHeader(counts: Record<string, number>): string {
  const entries = Object.entries(counts)
    .filter(([, count]) => count > 0)
    .sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0 ? 'none' : entries.map(([type, count]) => `${type}=${count}`).join(',');
}

/**
 * Every answer to a verified key says where the caller stands in its per-minute window: the window a
 * limits refusal carries, the one its reservation read, or a look that charges nothing.
 */
export async function refuseVerified(
  deps: Pick<MessagesDeps, 'clients'>,
  sink: Pick<ResponseSink, 'setRateLimit' | 'fail'>,
  key: commonv1.KeyContext,
  error: GatewayError,
  scope: RequestScope,
  reservedWindow?: RateLimitWindow,
): Promise<void> {
  const window = await windowForRefusal(deps.clients.quota, key, error, scope, reservedWindow);
  if (window) sink.setRateLimit(window);
  sink.fail(error);
}

/**
 * POST /v1/messages in five stages: authenticate (key, address), reserve (a concurrency slot, before
 * the body, for an upload still arriving), admit (body, policy, billing, the other limits), relay (the
 * router's events to the client) and settle (lease, usage event, the end of the answer, the log line).
 * Nothing is sent upstream before admission, a refusal consumes no per-minute slot and no allowance, and
 * a held lease is released whatever ends the request: with 0 tokens by a refusal or an exception before
 * the relay, else by settling, which runs whatever ends the relay.
 */
export async function handleMessages(deps: MessagesDeps, request: CallerRequest, sink: ResponseSink): Promise<void> {
  const startedAt = Date.now();
  const refused = (error: GatewayError, fields: Record<string, unknown> = {}) =>
    deps.logRequest(request, {
      duration_ms: Date.now() - startedAt,
      status: 'refused',
      error_type: error.type,
      ...fields,
    });

  const verified = await authenticate(deps.keys, request);
  if (!verified.ok) {
    sink.fail(verified.error);
    return refused(verified.error);
  }
  const key = verified.value;
  const ids = { key_id: key.keyId, account_id: key.accountId };
  // From here on, a revocation of the key ends this request wherever it is.
  const registration = deps.inFlight.register(key.keyId, {
    presentedKey: request.presentedKey,
    sourceAddress: request.sourceAddress,
    requestId: request.requestId,
  });
  try {
    // An upload that had all arrived when its key was verified never held a slot unfinished: Acquire
    // takes the slot with the window and the allowance, one quota round trip instead of two. Otherwise a
    // slot is reserved before the body, so that unfinished uploads count against the concurrency.
    const arrived = isJsonContentType(request.contentType) && (await request.bodyArrived(deps.bodyLimitFor(key.plan)));
    let reservation: Reservation | undefined;
    let lease: HeldLease | undefined;
    if (!arrived) {
      const reserved = await reserve(deps.clients.quota, key, request);
      if (!reserved.ok) {
        request.discardBody();
        await refuseVerified(deps, sink, key, reserved.error, request);
        return refused(reserved.error, ids);
      }
      reservation = reserved.value;
      lease = deps.leases.hold(reservation.lease, reservation.leaseTtlMs);
    }
    try {
      const admitted = await admit(deps, request, key, reservation);
      if (!admitted.ok) {
        // Released before the answer, so that a client retrying at once finds its slot free.
        lease?.release(0n);
        await refuseVerified(deps, sink, key, admitted.error, request, reservation?.window);
        return refused(admitted.error, ids);
      }
      lease ??= deps.leases.hold(admitted.value.lease, admitted.value.leaseTtlMs);
      await relayAndSettle(deps, request, sink, admitted.value, lease.release, registration.signal, startedAt);
    } finally {
      // A no-op once released above or by settling; after an exception in admission it frees the slot,
      // which the keeper would otherwise renew for as long as the process lives.
      lease?.release(0n);
    }
  } finally {
    registration.unregister();
  }
}

/** Stages 4 and 5: settling runs whatever ends the relay, an exception in the gateway's own code included. */
async function relayAndSettle(
  deps: MessagesDeps,
  request: CallerRequest,
  sink: ResponseSink,
  admission: Admission,
  releaseLease: (billableTokens: bigint) => void,
  keyStopped: AbortSignal,
  startedAt: number,
): Promise<void> {
  const state = newRelayState();
  let gatewayFailed = false;
  try {
    sink.setRateLimit(admission.window);
    if (admission.privacyFlags) {
      sink.setPrivacyFlags(privacyFlagsHeader(admission.privacyFlags));
      deps.countPrivacyFlags(admission.privacyFlags);
    }
    await relay(deps, request, sink, admission, keyStopped, state);
  } catch (error) {
    gatewayFailed = true;
    state.failure = gatewayError('api_error', internalErrorMessage);
    deps.logFailure(error, request, {
      key_id: admission.key.keyId,
      account_id: admission.key.accountId,
      stage: 'relay',
    });
  } finally {
    await settle(deps, request, sink, { admission, state, releaseLease, gatewayFailed, startedAt });
  }
}
