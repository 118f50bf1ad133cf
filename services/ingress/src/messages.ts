import { gatewayError, internalErrorMessage } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import type { commonv1 } from '@gw/proto';
import { admit } from './pipeline/admit';
import { authenticate } from './pipeline/authenticate';
import { newRelayState, relay } from './pipeline/relay';
import { settle } from './pipeline/settle';
import type { CallerRequest, MessagesDeps, ResponseSink } from './pipeline/types';
import { windowForRefusal } from './rate-limit';

export type { CallerRequest, MessagesDeps, ResponseSink, UsageEventInit } from './pipeline/types';

/** `x-privacy-flags`: counts by entity type, never values, e.g. `EMAIL=2,PHONE=1`, or `none`. */
export function privacyFlagsHeader(counts: Record<string, number>): string {
  const entries = Object.entries(counts)
    .filter(([, count]) => count > 0)
    .sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0 ? 'none' : entries.map(([type, count]) => `${type}=${count}`).join(',');
}

/**
 * Every answer to a verified key says where the caller stands in its per-minute window: the window a
 * limits refusal carries, or a look that charges nothing.
 */
export async function refuseVerified(
  deps: Pick<MessagesDeps, 'clients'>,
  sink: Pick<ResponseSink, 'setRateLimit' | 'fail'>,
  key: commonv1.KeyContext,
  error: GatewayError,
  requestId: string,
): Promise<void> {
  const window = await windowForRefusal(deps.clients.quota, key, error, requestId);
  if (window) sink.setRateLimit(window);
  sink.fail(error);
}

/**
 * POST /v1/messages in four stages: authenticate (key, address), admit (body, policy, billing, limits),
 * relay (the router's events to the client) and settle (lease, usage event, the end of the answer,
 * the log line). Nothing is sent upstream before admission, a refusal consumes nothing, and once a
 * lease is held settling runs whatever ends the request, an exception included.
 */
export async function handleMessages(deps: MessagesDeps, request: CallerRequest, sink: ResponseSink): Promise<void> {
  const startedAt = Date.now();
  const refused = (error: GatewayError, fields: Record<string, unknown> = {}) =>
    deps.logRequest({
      request_id: request.requestId,
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
  const registration = deps.inFlight.register(key.keyId);
  try {
    const admitted = await admit(deps, request, key);
    if (!admitted.ok) {
      await refuseVerified(deps, sink, key, admitted.error, request.requestId);
      return refused(admitted.error, ids);
    }
    const admission = admitted.value;
    const lease = deps.leases.hold(admission.lease, admission.leaseTtlMs);
    const state = newRelayState();
    let gatewayFailed = false;
    try {
      sink.setRateLimit(admission.window);
      if (admission.privacyFlags) {
        sink.setPrivacyFlags(privacyFlagsHeader(admission.privacyFlags));
        deps.countPrivacyFlags(admission.privacyFlags);
      }
      await relay(deps, request, sink, admission, registration.signal, state);
    } catch (error) {
      gatewayFailed = true;
      state.failure = gatewayError('api_error', internalErrorMessage);
      deps.logFailure(error, { request_id: request.requestId, ...ids, stage: 'relay' });
    } finally {
      await settle(deps, request, sink, {
        admission,
        state,
        releaseLease: lease.release,
        gatewayFailed,
        startedAt,
      });
    }
  } finally {
    registration.unregister();
  }
}
