import { gatewayError, internalErrorMessage } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import { privacyFlagsHeader } from '../domain/privacy-flags';
import type { VerifiedKey } from '../domain/key';
import { isJsonContentType } from '../domain/validation';
import { admit } from './admit';
import type { Admission } from './admit';
import { authenticate } from './authenticate';
import { refuseVerified } from './refuse';
import { newRelayState, relay } from './relay';
import type { RelayStateRef } from './relay';
import { reserve } from './reserve';
import type { Reservation } from './reserve';
import { billedSink, provisionalEventOf, settle } from './settle';
import type { CallerRequest, MessagesDeps, ResponseSink } from './types';

type HeldLease = ReturnType<MessagesDeps['reserve']['leases']['hold']>;

/** The log line of a request refused before the relay. */
function logRefusal(deps: MessagesDeps, request: CallerRequest, startedAt: number) {
  return (error: GatewayError, key?: VerifiedKey) =>
    deps.log.request(request, {
      duration_ms: Date.now() - startedAt,
      status: 'refused',
      error_type: error.type,
      ...(key && { key_id: key.keyId, account_id: key.accountId }),
    });
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
  const refused = logRefusal(deps, request, startedAt);
  const verified = await authenticate(deps.keys, request);
  if (!verified.ok) {
    sink.fail(verified.error);
    return refused(verified.error);
  }
  const key = verified.value;
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
    const arrived =
      isJsonContentType(request.contentType) && (await request.bodyArrived(deps.admit.bodyLimitFor(key.plan)));
    let reservation: Reservation | undefined;
    let lease: HeldLease | undefined;
    if (!arrived) {
      const reserved = await reserve(deps.reserve.quota, key, request);
      if (!reserved.ok) {
        request.discardBody();
        await refuseVerified(deps.refusal, sink, key, reserved.error, request);
        return refused(reserved.error, key);
      }
      reservation = reserved.value;
      lease = deps.reserve.leases.hold(reservation.lease, reservation.leaseTtlMs);
    }
    try {
      const admitted = await admit(deps.admit, request, key, reservation);
      if (!admitted.ok) {
        // Released before the answer, so that a client retrying at once finds its slot free.
        lease?.release(0n);
        await refuseVerified(deps.refusal, sink, key, admitted.error, request, reservation?.window);
        return refused(admitted.error, key);
      }
      lease ??= deps.reserve.leases.hold(admitted.value.lease, admitted.value.leaseTtlMs);
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
  clientSink: ResponseSink,
  admission: Admission,
  releaseLease: (billableTokens: bigint) => void,
  keyStopped: AbortSignal,
  startedAt: number,
): Promise<void> {
  const ref: RelayStateRef = { current: newRelayState() };
  let gatewayFailed = false;
  // The provisional usage record: its sync overlaps the upstream's time, and the client gets nothing before it is durable.
  const usage = deps.settle.beginUsage(provisionalEventOf(request.requestId, admission, startedAt), request);
  const sink = billedSink(clientSink, usage.provisionalDurable);
  try {
    sink.setRateLimit(admission.window);
    if (admission.privacyFlags) {
      sink.setPrivacyFlags(privacyFlagsHeader(admission.privacyFlags));
      deps.relay.countPrivacyFlags(admission.privacyFlags);
    }
    await relay(deps.relay, request, sink, admission, keyStopped, ref);
  } catch (error) {
    gatewayFailed = true;
    ref.current = { ...ref.current, failure: gatewayError('api_error', internalErrorMessage) };
    deps.log.failure(error, request, {
      key_id: admission.key.keyId,
      account_id: admission.key.accountId,
      stage: 'relay',
    });
  } finally {
    const state = ref.current;
    await settle(deps.settle, request, sink, { admission, state, releaseLease, gatewayFailed, startedAt, usage });
  }
}
