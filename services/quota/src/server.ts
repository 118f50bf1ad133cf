import { registration } from '@gw/grpc';
import { commonv1, quotav1 } from '@gw/proto';
import { dependencyUnavailableError, err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { boundedCount, isImplausible } from '@gw/usage';
import { expectedOneOf, keyEnvironments } from '@gw/vocabulary';
import { environmentFromProto } from '@gw/vocabulary/proto';
import type { EffectiveLimits } from './effective-limits';
import type { Caller, Environment, Lease, Limits } from './limits';

function environmentOf(value: commonv1.Environment): Result<Environment> {
  const environment = environmentFromProto(value);
  if (environment) return ok(environment);
  const expected = expectedOneOf(keyEnvironments, { quoted: false });
  return err(gatewayError('invalid_request_error', `environment: expected ${expected}.`));
}

function callerOf(key: commonv1.KeyContext | undefined): Result<Caller> {
  if (!key) return err(gatewayError('invalid_request_error', 'key: required.'));
  const environment = environmentOf(key.environment);
  if (!environment.ok) return environment;
  return ok({
    accountId: key.accountId,
    environment: environment.value,
    plan: key.plan,
    overrides: key.limitOverrides,
  });
}

const windowMessage = (window: { limit: number; remaining: number; resetUnixMs: number }) => ({
  limit: BigInt(window.limit),
  remaining: BigInt(window.remaining),
  resetUnixMs: BigInt(window.resetUnixMs),
});

const limitsMessage = (limits: EffectiveLimits) => ({
  requestsPerMinute: BigInt(limits.requestsPerMinute),
  concurrency: BigInt(limits.concurrency),
  monthlyTokens: BigInt(limits.monthlyTokens),
  overage: limits.overage,
  hardCeilingTokens: BigInt(limits.hardCeilingTokens),
});

const unavailable = () => err(dependencyUnavailableError('limits store'));

/**
 * `usageCapped`: counts a release whose tokens were above the plausible bound; they are charged capped to it, as
 * metering stores them (@gw/usage).
 */
export function quotaService(limits: Limits, usageCapped: () => void) {
  const leaseMessage = (lease: Lease) => ({
    leaseId: lease.leaseId,
    leaseTtlMs: BigInt(limits.leaseTtlMs),
    window: windowMessage(lease.window),
  });
  return registration(quotav1.QuotaService, {
    async reserve(request) {
      const caller = callerOf(request.key);
      if (!caller.ok) return caller;
      const lease = await limits.reserve(caller.value);
      return lease.ok ? ok(leaseMessage(lease.value)) : lease;
    },
    async acquire(request) {
      const caller = callerOf(request.key);
      if (!caller.ok) return caller;
      const lease = await limits.acquire(caller.value, request.leaseId);
      return lease.ok ? ok({ ...leaseMessage(lease.value), limits: limitsMessage(lease.value.limits) }) : lease;
    },
    async peek(request) {
      const caller = callerOf(request.key);
      if (!caller.ok) return caller;
      const peeked = await limits.peek(caller.value);
      return peeked.ok
        ? ok({ window: windowMessage(peeked.value.window), limits: limitsMessage(peeked.value.limits) })
        : peeked;
    },
    async renew(request) {
      const environment = environmentOf(request.environment);
      if (!environment.ok) return environment;
      try {
        return ok({ held: await limits.renew(request.accountId, environment.value, request.leaseId) });
      } catch {
        return unavailable();
      }
    },
    async release(request) {
      const environment = environmentOf(request.environment);
      if (!environment.ok) return environment;
      try {
        const billable = Number(request.billableTokens);
        if (isImplausible(billable)) usageCapped();
        await limits.release(request.accountId, environment.value, request.leaseId, boundedCount(billable));
        return ok({});
      } catch {
        return unavailable();
      }
    },
  });
}
