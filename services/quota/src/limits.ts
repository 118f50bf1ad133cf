import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { dependencyUnavailableError, err, gatewayError, ok, overloadRetryAfterMs } from '@gw/errors';
import type { GatewayError, RateLimitWindow, Result } from '@gw/errors';
import type { PlanConfig } from '@gw/config';
import type { commonv1 } from '@gw/proto';
import { billingPeriodOf, KeyEnvironment } from '@gw/vocabulary';
import { effectiveLimits } from './effective-limits';
import type { EffectiveLimits } from './effective-limits';
import {
  acquireReservedScript,
  acquireScript,
  admission,
  peekScript,
  rebuildScript,
  releaseScript,
  renewScript,
  reserveScript,
} from './scripts';

export type Environment = KeyEnvironment;

/** What the limits need to know of the caller. */
export interface Caller {
  accountId: string;
  environment: Environment;
  plan: string;
  overrides: commonv1.LimitOverrides | undefined;
}

export interface Lease {
  leaseId: string;
  window: RateLimitWindow;
  limits: EffectiveLimits;
}

/** outcome, window count, window reset ms (and, from the acquire scripts, tokens used). */
type Reply = [number, number, number, ...number[]];

interface LimitScripts {
  gwReserve(rpmKey: string, inflightKey: string, concurrency: number, leaseId: string, ttlMs: number): Promise<Reply>;
  gwAcquire(
    rpmKey: string,
    inflightKey: string,
    tokensKey: string,
    rpm: number,
    concurrency: number,
    leaseId: string,
    ttlMs: number,
    allowance: number,
    ceiling: number,
    overage: number,
  ): Promise<Reply>;
  gwAcquireReserved(
    rpmKey: string,
    inflightKey: string,
    tokensKey: string,
    rpm: number,
    leaseId: string,
    allowance: number,
    ceiling: number,
    overage: number,
  ): Promise<Reply>;
  gwPeek(rpmKey: string): Promise<[number, number]>;
  gwRenew(inflightKey: string, leaseId: string, ttlMs: number): Promise<number>;
  gwRelease(
    inflightKey: string,
    tokensKey: string,
    releasedKey: string,
    leaseId: string,
    tokens: number,
    releasedTtlMs: number,
  ): Promise<number>;
  gwRebuild(tokensKey: string, value: number, ttlMs: number): Promise<number>;
}

/** One call of a limits script on Redis: its time, and whether Redis answered (a refusal is an answer). */
export type ScriptObserver = (script: string, seconds: number, failed: boolean) => void;

/** The scripts, each timed and its failures counted; the decision itself is unchanged. */
function observedScripts(scripts: LimitScripts, observe: ScriptObserver): LimitScripts {
  const timed =
    <A extends unknown[], R>(script: string, run: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const startedAt = performance.now();
      try {
        const reply = await run(...args);
        observe(script, (performance.now() - startedAt) / 1000, false);
        return reply;
      } catch (error) {
        observe(script, (performance.now() - startedAt) / 1000, true);
        throw error;
      }
    };
  return {
    gwReserve: timed('reserve', scripts.gwReserve.bind(scripts)),
    gwAcquire: timed('acquire', scripts.gwAcquire.bind(scripts)),
    gwAcquireReserved: timed('acquire_reserved', scripts.gwAcquireReserved.bind(scripts)),
    gwPeek: timed('peek', scripts.gwPeek.bind(scripts)),
    gwRenew: timed('renew', scripts.gwRenew.bind(scripts)),
    gwRelease: timed('release', scripts.gwRelease.bind(scripts)),
    gwRebuild: timed('rebuild', scripts.gwRebuild.bind(scripts)),
  };
}

/** Where the allowance is rebuilt from when its counter is lost. */
export interface AllowanceSource {
  billableTokens(accountId: string, periodStart: string): Promise<number>;
}

const tag = (accountId: string, environment: Environment) => `{a:${accountId}:${environment}}`;
const keysOf = (accountId: string, environment: Environment, periodKey: string) => {
  const prefix = `q:${tag(accountId, environment)}`;
  return { rpm: `${prefix}:rpm`, inflight: `${prefix}:inflight`, tokens: `${prefix}:tokens:${periodKey}` };
};
const releasedKeyOf = (accountId: string, environment: Environment, leaseId: string) =>
  `q:${tag(accountId, environment)}:released:${leaseId}`;
/** Counters outlive their period a little, so late releases still find them. */
const tokensKeyGraceMs = 35 * 24 * 3600 * 1000;
/** A release marker outlives every retry of that release (ingress retries for up to 110 s). */
const releasedMarkerTtlMs = 120_000;

const unavailable = () => dependencyUnavailableError('limits store');

/**
 * The three limits of an account, decided atomically in Redis (or Redis Cluster). Without Redis nothing
 * is admitted: a refusal with overloaded_error, never unchecked spend.
 */
export class Limits {
  private readonly scripts: LimitScripts;

  constructor(
    redis: Redis | Cluster,
    private readonly plans: ReadonlyMap<string, PlanConfig>,
    private readonly allowanceSource: AllowanceSource,
    readonly leaseTtlMs: number,
    private readonly now: () => Date = () => new Date(),
    observeScript?: ScriptObserver,
  ) {
    redis.defineCommand('gwReserve', { numberOfKeys: 2, lua: reserveScript });
    redis.defineCommand('gwAcquire', { numberOfKeys: 3, lua: acquireScript });
    redis.defineCommand('gwAcquireReserved', { numberOfKeys: 3, lua: acquireReservedScript });
    redis.defineCommand('gwPeek', { numberOfKeys: 1, lua: peekScript });
    redis.defineCommand('gwRenew', { numberOfKeys: 1, lua: renewScript });
    redis.defineCommand('gwRelease', { numberOfKeys: 3, lua: releaseScript });
    redis.defineCommand('gwRebuild', { numberOfKeys: 1, lua: rebuildScript });
    const scripts = redis as unknown as LimitScripts;
    this.scripts = observeScript ? observedScripts(scripts, observeScript) : scripts;
  }

  limitsOf(caller: Caller): Result<EffectiveLimits> {
    const plan = this.plans.get(caller.plan);
    if (!plan) return err(gatewayError('api_error', `The account's plan "${caller.plan}" is not configured.`));
    return ok(effectiveLimits(plan, caller.overrides));
  }

  /**
   * Takes a concurrency lease for a request whose body has not been read yet, charging nothing else;
   * acquire(caller, leaseId) admits it later. The window is read, not charged.
   */
  async reserve(caller: Caller): Promise<Result<Lease>> {
    const limits = this.limitsOf(caller);
    if (!limits.ok) return limits;
    const keys = keysOf(caller.accountId, caller.environment, '');
    const leaseId = randomUUID();
    try {
      const reply = await this.scripts.gwReserve(
        keys.rpm,
        keys.inflight,
        limits.value.concurrency,
        leaseId,
        this.leaseTtlMs,
      );
      return this.decide(reply, limits.value, leaseId);
    } catch {
      return err(unavailable());
    }
  }

  /**
   * Admits a request: charges the per-minute window and checks the allowance (and, without a reserved
   * lease, the concurrency, taking a new lease). A refusal charges nothing, and frees a reserved lease.
   */
  async acquire(caller: Caller, reservedLeaseId?: string): Promise<Result<Lease>> {
    const limits = this.limitsOf(caller);
    if (!limits.ok) return limits;
    const period = billingPeriodOf(this.now());
    const keys = keysOf(caller.accountId, caller.environment, period.month);
    const leaseId = reservedLeaseId ?? randomUUID();
    // Test traffic is limited per minute and by concurrency, but never touches the allowance.
    const allowance = caller.environment === KeyEnvironment.live ? limits.value.monthlyTokens : -1;
    const overage = limits.value.overage ? 1 : 0;
    const run = () =>
      reservedLeaseId === undefined
        ? this.scripts.gwAcquire(
            keys.rpm,
            keys.inflight,
            keys.tokens,
            limits.value.requestsPerMinute,
            limits.value.concurrency,
            leaseId,
            this.leaseTtlMs,
            allowance,
            limits.value.hardCeilingTokens,
            overage,
          )
        : this.scripts.gwAcquireReserved(
            keys.rpm,
            keys.inflight,
            keys.tokens,
            limits.value.requestsPerMinute,
            leaseId,
            allowance,
            limits.value.hardCeilingTokens,
            overage,
          );
    let reply: Reply;
    try {
      reply = await run();
      if (reply[0] === admission.allowanceUnknown) {
        const used = await this.allowanceSource.billableTokens(caller.accountId, period.startDay);
        await this.scripts.gwRebuild(keys.tokens, used, period.end.getTime() - this.now().getTime() + tokensKeyGraceMs);
        reply = await run();
      }
    } catch {
      return err(unavailable());
    }
    return this.decide(reply, limits.value, leaseId);
  }

  async peek(caller: Caller): Promise<Result<{ window: RateLimitWindow; limits: EffectiveLimits }>> {
    const limits = this.limitsOf(caller);
    if (!limits.ok) return limits;
    try {
      const [count, resetUnixMs] = await this.scripts.gwPeek(keysOf(caller.accountId, caller.environment, '').rpm);
      const limit = limits.value.requestsPerMinute;
      return ok({ window: { limit, remaining: Math.max(0, limit - count), resetUnixMs }, limits: limits.value });
    } catch {
      return err(unavailable());
    }
  }

  async renew(accountId: string, environment: Environment, leaseId: string): Promise<boolean> {
    const { inflight } = keysOf(accountId, environment, '');
    return (await this.scripts.gwRenew(inflight, leaseId, this.leaseTtlMs)) === 1;
  }

  /**
   * Frees the lease and charges the request's weighted tokens to the period it ended in, once per lease
   * however often it is called, so a release whose reply was lost may be retried.
   */
  async release(accountId: string, environment: Environment, leaseId: string, billableTokens: number): Promise<void> {
    const keys = keysOf(accountId, environment, billingPeriodOf(this.now()).month);
    await this.scripts.gwRelease(
      keys.inflight,
      keys.tokens,
      releasedKeyOf(accountId, environment, leaseId),
      leaseId,
      environment === KeyEnvironment.live ? billableTokens : 0,
      releasedMarkerTtlMs,
    );
  }

  private decide([outcome, count, resetUnixMs]: Reply, limits: EffectiveLimits, leaseId: string): Result<Lease> {
    const limit = limits.requestsPerMinute;
    const window = { limit, remaining: Math.max(0, limit - count), resetUnixMs };
    const refuse = (error: GatewayError) => err({ ...error, rateLimit: window });
    switch (outcome) {
      case admission.admitted:
        return ok({ leaseId, window, limits });
      case admission.perMinuteFull:
        return refuse(
          gatewayError(
            'rate_limit_error',
            `Too many requests: the limit is ${limit} per minute. Retry after the window resets.`,
            { retryAfterMs: Math.max(0, resetUnixMs - this.now().getTime()), reason: 'per_minute' },
          ),
        );
      case admission.concurrencyFull:
        return refuse(
          gatewayError(
            'rate_limit_error',
            `Too many concurrent requests: the limit is ${limits.concurrency} in flight. Retry when one has finished.`,
            { retryAfterMs: 1000, reason: 'concurrency' },
          ),
        );
      case admission.allowanceUsed:
        return refuse(
          gatewayError(
            'quota_exceeded',
            `The monthly token allowance of ${limits.monthlyTokens} tokens is used up. Upgrade the plan or wait for the next billing period.`,
            { reason: 'quota_exceeded' },
          ),
        );
      case admission.ceilingReached:
        return refuse(
          gatewayError(
            'quota_exceeded',
            `The hard ceiling of ${limits.hardCeilingTokens} tokens for this billing period is reached. Upgrade the plan or wait for the next billing period.`,
            { reason: 'hard_ceiling' },
          ),
        );
      case admission.leaseLapsed:
        return refuse(
          gatewayError(
            'overloaded_error',
            "The request's concurrency slot lapsed before it was admitted. Retry with exponential backoff.",
            { retryAfterMs: overloadRetryAfterMs },
          ),
        );
      default:
        return err(unavailable());
    }
  }
}
