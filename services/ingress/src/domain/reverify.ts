import { setTimeout as delay } from 'node:timers/promises';
import type { GatewayError } from '@gw/errors';
import { expiredError } from './in-flight';
import type { InFlightRequests } from './in-flight';
import type { VerifyWithAuth } from './verified-keys';

/** What one re-verification found. */
export interface ReverifyOutcome {
  /** Keys (per source address) asked about. */
  checked: number;
  /** Keys whose requests were ended: revoked, expired, suspended or no longer allowed. */
  stopped: number;
  /** Keys auth could not answer for (an outage of its own): still serving, asked again. */
  unanswered: number;
}

export interface ReverifyDeps {
  inFlight: Pick<InFlightRequests, 'keysInFlight' | 'revokeKey' | 'endKey'>;
  /** Auth itself, never the key cache: the cache is what a missed notice may have left stale. */
  verifyWithAuth: VerifyWithAuth;
  /** Questions to auth at a time, so that a reconnect with many keys in flight does not flood it. */
  concurrency: number;
}

/**
 * After the revocation channel was down, any notice sent meanwhile is lost: every key with requests
 * in flight is verified again with auth, and the requests of a key auth now refuses end with the
 * error a notice would have ended them with. A key auth could not answer for keeps serving and is
 * reported as unanswered, for the caller to ask again.
 */
export async function reverifyInFlight(deps: ReverifyDeps): Promise<ReverifyOutcome> {
  const keys = deps.inFlight.keysInFlight();
  const outcome: ReverifyOutcome = { checked: keys.length, stopped: 0, unanswered: 0 };
  const stoppedKeyIds = new Set<string>();
  let next = 0;
  const worker = async () => {
    while (next < keys.length) {
      const { keyId, credentials } = keys[next++]!;
      if (stoppedKeyIds.has(keyId)) continue;
      const verified = await deps.verifyWithAuth(credentials.presentedKey, credentials.sourceAddress, {
        requestId: credentials.requestId,
      });
      if (verified.ok) continue;
      const stop = stopFor(verified.error);
      if (stop === undefined) {
        outcome.unanswered += 1;
        continue;
      }
      stoppedKeyIds.add(keyId);
      outcome.stopped += 1;
      if (stop === 'revoked') deps.inFlight.revokeKey(keyId);
      else deps.inFlight.endKey(keyId, stop);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(deps.concurrency, keys.length)) }, worker));
  return outcome;
}

export interface RetryOptions {
  /** Passes at most, the first included. */
  attempts: number;
  /** Pause between two passes. */
  retryDelayMs: number;
  /** Aborted at shutdown: no further pass. */
  signal: AbortSignal;
}

/**
 * Re-verifies until auth has answered for every key in flight, or the attempts run out (auth out for
 * longer than that): a key is never taken as fine because auth could not be asked.
 */
export async function reverifyUntilAnswered(deps: ReverifyDeps, retry: RetryOptions): Promise<ReverifyOutcome[]> {
  const passes: ReverifyOutcome[] = [];
  for (let attempt = 0; attempt < retry.attempts && !retry.signal.aborted; attempt += 1) {
    if (attempt > 0) await delay(retry.retryDelayMs, undefined, { signal: retry.signal }).catch(() => undefined);
    if (retry.signal.aborted) break;
    const outcome = await reverifyInFlight(deps);
    passes.push(outcome);
    if (outcome.unanswered === 0) break;
  }
  return passes;
}

/**
 * The error to end a key's requests with, when auth's answer is a refusal of the key; undefined when
 * the answer is a failure to decide (auth or its store out), which says nothing about the key.
 */
function stopFor(error: GatewayError): GatewayError | 'revoked' | undefined {
  if (error.type === 'authentication_error') return error.reason === 'expired' ? expiredError() : 'revoked';
  if (error.type === 'permission_error') return error;
  return undefined;
}
