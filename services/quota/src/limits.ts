import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { err, gatewayError, ok } from '@gw/errors';
import type { RateLimitWindow, Result } from '@gw/errors';
import type { PlanConfig } from '@gw/config';
import { acquireScript, renewScript } from './scripts';

export type Environment = 'live' | 'test';

export interface Lease {
  leaseId: string;
  window: RateLimitWindow;
}

interface LimitScripts {
  gwAcquire(
    rpmKey: string,
    inflightKey: string,
    rpm: number,
    concurrency: number,
    leaseId: string,
    ttlMs: number,
  ): Promise<[number, number, number]>;
  gwRenew(inflightKey: string, leaseId: string, ttlMs: number): Promise<number>;
}

const tag = (accountId: string, environment: Environment) => `{a:${accountId}:${environment}}`;
const rpmKey = (accountId: string, environment: Environment) => `q:${tag(accountId, environment)}:rpm`;
const inflightKey = (accountId: string, environment: Environment) => `q:${tag(accountId, environment)}:inflight`;

/** The per-minute window and concurrency leases of an account, decided atomically in Redis. */
export class Limits {
  private readonly scripts: LimitScripts;

  constructor(
    private readonly redis: Redis,
    private readonly plans: ReadonlyMap<string, PlanConfig>,
    readonly leaseTtlMs: number,
  ) {
    redis.defineCommand('gwAcquire', { numberOfKeys: 2, lua: acquireScript });
    redis.defineCommand('gwRenew', { numberOfKeys: 1, lua: renewScript });
    this.scripts = redis as unknown as LimitScripts;
  }

  async acquire(accountId: string, environment: Environment, planId: string): Promise<Result<Lease>> {
    const plan = this.plans.get(planId);
    if (!plan) return err(gatewayError('api_error', `The account's plan "${planId}" is not configured.`));
    const { requestsPerMinute, concurrency } = plan.limits;
    const leaseId = randomUUID();
    let status: number, count: number, resetUnixMs: number;
    try {
      [status, count, resetUnixMs] = await this.scripts.gwAcquire(
        rpmKey(accountId, environment),
        inflightKey(accountId, environment),
        requestsPerMinute,
        concurrency,
        leaseId,
        this.leaseTtlMs,
      );
    } catch {
      // Never admit unchecked: without Redis nothing is decided.
      return err(
        gatewayError(
          'overloaded_error',
          'The gateway cannot check rate limits right now. Retry with exponential backoff.',
          {
            retryAfterMs: 1000,
          },
        ),
      );
    }
    const window = { limit: requestsPerMinute, remaining: Math.max(0, requestsPerMinute - count), resetUnixMs };
    if (status === 2) {
      return err(
        gatewayError(
          'rate_limit_error',
          `Too many requests: the limit is ${requestsPerMinute} per minute. Retry after the window resets.`,
          { retryAfterMs: Math.max(0, resetUnixMs - Date.now()), rateLimit: window },
        ),
      );
    }
    if (status === 3) {
      return err(
        gatewayError(
          'rate_limit_error',
          `Too many concurrent requests: the limit is ${concurrency} in flight. Retry when one has finished.`,
          { retryAfterMs: 1000, rateLimit: window },
        ),
      );
    }
    return ok({ leaseId, window });
  }

  async renew(accountId: string, environment: Environment, leaseId: string): Promise<boolean> {
    return (await this.scripts.gwRenew(inflightKey(accountId, environment), leaseId, this.leaseTtlMs)) === 1;
  }

  async release(accountId: string, environment: Environment, leaseId: string): Promise<void> {
    await this.redis.zrem(inflightKey(accountId, environment), leaseId);
  }
}
