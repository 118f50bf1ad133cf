import { setTimeout as sleep } from 'node:timers/promises';
import { authorizeKey, catalogueFromMessage, keyPermissionsOf } from '@gw/catalogue';
import type { Catalogue } from '@gw/catalogue';
import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { commonv1 } from '@gw/proto';
import type { policyv1 } from '@gw/proto';
import type { Logger } from '@gw/telemetry';
import type { Clients } from '../clients';
import type { ListedModel } from '../domain/models';
import type { Authorization } from '../domain/authorization';
import type { VerifiedKey } from '../domain/key';

/** Opens one WatchCatalogue subscription; aborting the signal cancels it. */
export type CatalogueStream = (signal: AbortSignal) => AsyncIterable<Result<policyv1.WatchCatalogueResponse>>;

/**
 * Every stream has a deadline, this one too: a subscription is renewed every half hour (the follower
 * resubscribes at once after a stream that delivered), so that no call lives for ever on a connection.
 */
export const catalogueSubscriptionMs = 30 * 60_000;

/** Policy's WatchCatalogue, renewed every catalogueSubscriptionMs. */
export const catalogueStreamOf =
  (policy: Pick<Clients['policy'], 'watchCatalogue'>): CatalogueStream =>
  (signal) =>
    policy.watchCatalogue({}, { signal, timeoutMs: catalogueSubscriptionMs });

/**
 * The wait before resubscribing: the first wait doubled for each attempt in a row that brought no
 * catalogue, capped, and then a random point between half of it and all of it, so that the ingresses
 * that lost the same policy do not all come back at the same instant.
 */
export function retryDelayMs(fruitlessAttempts: number, firstMs: number, maxMs: number, random: () => number): number {
  const step = Math.min(maxMs, firstMs * 2 ** fruitlessAttempts);
  return Math.round(step / 2 + (random() * step) / 2);
}

export interface CatalogueFollowerOptions {
  watch: CatalogueStream;
  logger: Logger;
  /** Wait before the first resubscription; doubles with each attempt that brings no catalogue (100 ms). */
  firstRetryMs?: number;
  /** The longest wait between attempts (5 s). */
  maxRetryMs?: number;
  /** Uniform in [0, 1): spreads the resubscriptions of many ingresses after a policy restart. */
  random?: () => number;
}

/**
 * Follows policy's catalogue: subscribes at construction, keeps the newest snapshot, and resubscribes
 * with capped exponential backoff whenever the stream fails or ends, until close(). The last catalogue
 * stays in use meanwhile: it changes only when the configuration does.
 */
export class CatalogueFollower {
  private latest: Catalogue | undefined;
  private readonly stop = new AbortController();
  private readonly following: Promise<void>;
  private readonly firstRetryMs: number;
  private readonly maxRetryMs: number;
  private readonly random: () => number;

  constructor(private readonly options: CatalogueFollowerOptions) {
    this.firstRetryMs = options.firstRetryMs ?? 100;
    this.maxRetryMs = options.maxRetryMs ?? 5_000;
    this.random = options.random ?? Math.random;
    this.following = this.follow();
  }

  /** The newest catalogue policy sent; undefined until the first arrives. */
  current(): Catalogue | undefined {
    return this.latest;
  }

  /**
   * policy.Authorize's answer, decided here, for a key whose privacy mode is off: that mode needs the
   * key and the model, never the text. undefined when policy must decide: no catalogue yet, or a mode
   * that works on the body.
   */
  authorizeWithoutBody(key: VerifiedKey, model: string): Result<Authorization> | undefined {
    const catalogue = this.latest;
    if (catalogue === undefined || key.privacyMode !== commonv1.PrivacyMode.OFF) return undefined;
    const pools = authorizeKey(catalogue, key.record, model);
    return pools.ok
      ? ok({ pools: pools.value, body: undefined, privacyFlags: {}, placeholders: [], placeholderNonce: '' })
      : pools;
  }

  /** The models a key may use inside its tier, as listed in the catalogue; undefined until one has arrived. */
  modelsFor(key: VerifiedKey): Result<ListedModel[]> | undefined {
    const catalogue = this.latest;
    if (catalogue === undefined) return undefined;
    const permissions = keyPermissionsOf(key.record);
    if (!permissions.ok) return permissions;
    return ok(
      catalogue.listModels(permissions.value).map((model) => ({
        id: model.alias,
        displayName: model.displayName,
        createdAtUnixMs: model.createdAtUnixMs,
      })),
    );
  }

  /** Cancels the subscription and any wait to resubscribe; resolves once following has stopped. */
  close(): Promise<void> {
    this.stop.abort();
    return this.following;
  }

  private async follow(): Promise<void> {
    let fruitlessAttempts = 0;
    while (!this.stop.signal.aborted) {
      const delivered = await this.readSubscription();
      if (this.stop.signal.aborted) return;
      fruitlessAttempts = delivered ? 0 : fruitlessAttempts + 1;
      const retryInMs = retryDelayMs(fruitlessAttempts, this.firstRetryMs, this.maxRetryMs, this.random);
      this.options.logger.info({ retry_in_ms: retryInMs, attempts: fruitlessAttempts }, 'catalogue resubscribing');
      // Unreferenced: a pending resubscription alone must not keep the process alive.
      await sleep(retryInMs, undefined, { signal: this.stop.signal, ref: false }).catch(() => undefined);
    }
  }

  /** Reads one subscription until it fails or ends; true when it brought a usable catalogue. */
  private async readSubscription(): Promise<boolean> {
    const { logger } = this.options;
    let delivered = false;
    for await (const received of this.options.watch(this.stop.signal)) {
      if (this.stop.signal.aborted) return delivered;
      if (!received.ok) {
        logger.warn({ err: received.error.message }, 'catalogue stream failed');
        return delivered;
      }
      const snapshot = received.value.snapshot;
      if (snapshot !== undefined && snapshot.version === this.latest?.version) {
        delivered = true;
        continue;
      }
      const catalogue = catalogueFromMessage(snapshot);
      if (!catalogue.ok) {
        // The previous catalogue, if any, stays: it was whole and policy's own.
        logger.error({ err: catalogue.error.message }, 'catalogue snapshot refused');
        return delivered;
      }
      this.latest = catalogue.value;
      delivered = true;
      logger.info({ catalogue_version: catalogue.value.version }, 'catalogue snapshot in use');
    }
    if (!this.stop.signal.aborted) logger.info('catalogue stream ended');
    return delivered;
  }
}
