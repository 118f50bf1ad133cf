import { registration } from '@gw/grpc';
import { commonv1, quotav1 } from '@gw/proto';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { Environment, Limits } from './limits';

function environmentOf(value: commonv1.Environment): Result<Environment> {
  if (value === commonv1.Environment.LIVE) return ok('live');
  if (value === commonv1.Environment.TEST) return ok('test');
  return err(gatewayError('invalid_request_error', 'environment: expected live or test.'));
}

const unavailable = () =>
  err(
    gatewayError('overloaded_error', 'The gateway cannot reach its limits store. Retry with exponential backoff.', {
      retryAfterMs: 1000,
    }),
  );

export function quotaService(limits: Limits) {
  return registration(quotav1.QuotaService, {
    async acquire(request) {
      const environment = environmentOf(request.environment);
      if (!environment.ok) return environment;
      const lease = await limits.acquire(request.accountId, environment.value, request.plan);
      if (!lease.ok) return lease;
      const { window } = lease.value;
      return ok({
        leaseId: lease.value.leaseId,
        leaseTtlMs: BigInt(limits.leaseTtlMs),
        window: {
          limit: BigInt(window.limit),
          remaining: BigInt(window.remaining),
          resetUnixMs: BigInt(window.resetUnixMs),
        },
      });
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
        await limits.release(request.accountId, environment.value, request.leaseId);
        return ok({});
      } catch {
        return unavailable();
      }
    },
  });
}
