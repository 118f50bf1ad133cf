import type { RevocationNotice } from '@gw/revocations';
import type { Logger } from '@gw/telemetry';
import type { InFlightRequests } from './in-flight';
import { reverifyUntilAnswered } from './reverify';
import type { VerifiedKeys, VerifyWithAuth } from './verified-keys';

export interface RevocationHandlingDeps {
  keys: Pick<VerifiedKeys, 'dropKey' | 'dropAccount' | 'setEnabled'>;
  inFlight: InFlightRequests;
  /** Auth itself, never the key cache: asked again about the keys in flight after the channel was down. */
  verifyWithAuth: VerifyWithAuth;
  logger: Logger;
  /** Aborted at shutdown: no further re-verification pass. */
  stopping: AbortSignal;
}

/**
 * What this ingress does with the revocation channel: a revoked key is forgotten by the cache and its
 * requests in flight end at once; an account change forgets the account's keys; while the channel is
 * down nothing is cached, and once it is back every key in flight is verified again (notices sent
 * meanwhile are lost).
 */
export function revocationHandling(deps: RevocationHandlingDeps) {
  const { keys, inFlight, logger } = deps;
  return {
    onNotice: (notice: RevocationNotice) => {
      if (!('keyId' in notice)) return keys.dropAccount(notice.accountId);
      keys.dropKey(notice.keyId);
      const ended = inFlight.revokeKey(notice.keyId);
      if (ended > 0) logger.info({ key_id: notice.keyId, ended }, 'revoked key: requests in flight ended');
    },
    onConnectionChange: (connected: boolean) => {
      keys.setEnabled(connected);
      logger.info({ connected }, 'revocation channel');
      if (!connected) return;
      void reverifyUntilAnswered(
        {
          inFlight,
          verifyWithAuth: deps.verifyWithAuth,
          concurrency: 16,
        },
        { attempts: 30, retryDelayMs: 1_000, signal: deps.stopping },
      ).then((passes) =>
        logger.info({ passes }, 'keys in flight verified again after the revocation channel was down'),
      );
    },
    onError: (error: Error) => logger.warn({ err: error.message }, 'redis subscriber connection problem'),
  };
}
