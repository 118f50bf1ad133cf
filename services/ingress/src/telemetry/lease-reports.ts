import { Counter, Gauge } from '@gw/telemetry';
import type { Logger, Registry } from '@gw/telemetry';
import type { LeaseEvents, LeaseKeeper } from '../domain/leases';

/** What happens to leases after admission, in the log (ids only) and the metrics. */
export function leaseReports(logger: Logger, registry: Registry): LeaseEvents & { watch(keeper: LeaseKeeper): void } {
  const lost = new Counter({
    name: 'gateway_quota_leases_lost_total',
    help: 'Concurrency leases quota no longer held while their request was still running.',
    registers: [registry],
  });
  const retried = new Counter({
    name: 'gateway_quota_release_retries_total',
    help: 'Lease releases retried after a failed attempt (a release charges its tokens once however often it arrives).',
    registers: [registry],
  });
  const abandoned = new Counter({
    name: 'gateway_quota_releases_abandoned_total',
    help: 'Lease releases given up after every retry: their tokens are in metering but not in the allowance counter.',
    registers: [registry],
  });
  const abandonedTokens = new Counter({
    name: 'gateway_quota_abandoned_release_tokens_total',
    help: 'Billable tokens of the releases given up.',
    registers: [registry],
  });
  return {
    leaseLost: (ref) => {
      lost.inc();
      logger.warn({ account_id: ref.accountId, lease_id: ref.leaseId }, 'lease lost while its request was running');
    },
    releaseRetrying: (ref, attempt, error) => {
      retried.inc();
      if (attempt === 1) {
        logger.warn(
          { account_id: ref.accountId, lease_id: ref.leaseId, error_type: error.type },
          'lease release failed: retrying',
        );
      }
    },
    releaseAbandoned: (ref, tokens, error) => {
      abandoned.inc();
      abandonedTokens.inc(Number(tokens));
      logger.error(
        { account_id: ref.accountId, lease_id: ref.leaseId, billable_tokens: Number(tokens), error_type: error.type },
        'lease release abandoned: the allowance counter misses these tokens',
      );
    },
    watch: (keeper) => {
      new Gauge({
        name: 'gateway_quota_leases_held',
        help: 'Concurrency leases this ingress holds and renews; far above the requests in flight means leaked leases.',
        registers: [registry],
        collect() {
          this.set(keeper.count());
        },
      });
      new Gauge({
        name: 'gateway_quota_releases_pending',
        help: 'Lease releases waiting for a retry.',
        registers: [registry],
        collect() {
          this.set(keeper.pendingReleases());
        },
      });
    },
  };
}
