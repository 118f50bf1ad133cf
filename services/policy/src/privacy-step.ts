import { err, gatewayError, ok } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import { PrivacyMode } from '@gw/vocabulary';
import { transformBody, unchangedBody } from './privacy';
import type { PrivacyOutcome } from './privacy';
import type { PrivacyPool } from './privacy-pool';

/**
 * Bodies up to this size run on the gRPC thread: they take at most about a millisecond there, less than the
 * round trip to a worker thread costs (docs/decisions.md).
 */
export const inlineMaxBytes = 16 * 1024;

export const privacyStepFailed = (): GatewayError =>
  gatewayError(
    'api_error',
    'The privacy step failed for this request; it was not forwarded. Retry once, then contact support quoting the x-request-id header.',
  );

/** Applies a key's privacy mode to a request body of an account; fails closed (never the body unprocessed). */
export type PrivacyStep = (
  account: string,
  mode: PrivacyMode,
  body: Uint8Array,
  signal: AbortSignal,
) => Promise<Result<PrivacyOutcome>>;

/** An outcome that refuses the request (a thinking block holding personal data) is the caller's 400. */
function refusedOrForwarded(outcome: PrivacyOutcome): Result<PrivacyOutcome> {
  return outcome.refusal === undefined ? ok(outcome) : err(gatewayError('invalid_request_error', outcome.refusal));
}

/** Mode `off` touches nothing; small bodies run inline, the rest on the pool's threads. */
export function privacyStep(pool: Pick<PrivacyPool, 'run'>): PrivacyStep {
  return async (account, mode, body, signal) => {
    if (mode === PrivacyMode.off) return ok(unchangedBody());
    if (body.byteLength > inlineMaxBytes) {
      const outcome = await pool.run(account, mode, body, signal);
      return outcome.ok ? refusedOrForwarded(outcome.value) : outcome;
    }
    try {
      return refusedOrForwarded(transformBody(mode, body));
    } catch {
      return err(privacyStepFailed());
    }
  };
}
