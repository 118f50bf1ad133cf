import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type { PlanConfig } from '@gw/config';
import { createPool } from '@gw/db';
import type { Pool } from '@gw/db';
import type { Result } from '@gw/errors';
import { waitForRoomInMinute, waitUntil } from '@gw/testing';
import { createTestDatabase } from '../../../test/support/database';
import type { TestDatabase } from '../../../test/support/database';
import { billingPeriodOf } from '@gw/vocabulary';
import { UsageLedger } from '../src/ledger';
import { Limits } from '../src/limits';
import type { Caller, Lease } from '../src/limits';

const plan: PlanConfig = {
  id: 'small',
  residency: ['eu'],
  models: 'all',
  limits: { requestsPerMinute: 4, concurrency: 2, monthlyTokens: 1000 },
  overage: { enabled: false, gbpPerMtok: 0 },
};
/** Short enough for a test to watch a reserved lease lapse. */
const shortLeaseTtlMs = 150;

/** Waits out the last seconds of a clock minute, so a burst never straddles two windows. */
const awayFromMinuteBoundary = () => waitForRoomInMinute(3_000);

function leaseOf(result: Result<Lease>): Lease {
  if (!result.ok) throw new Error(`expected a lease, got ${result.error.type}: ${result.error.message}`);
  return result.value;
}

describe('Reserve, then Acquire with the reserved lease, against real Redis', () => {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
  let database: TestDatabase;
  let pool: Pool;
  let limits: Limits;
  let shortLived: Limits;
  const caller = (overrides: Partial<Caller> = {}): Caller => ({
    accountId: `acct_${randomUUID()}`,
    environment: 'live',
    plan: plan.id,
    overrides: undefined,
    ...overrides,
  });
  const keysOf = (who: Caller) => {
    const prefix = `q:{a:${who.accountId}:${who.environment}}`;
    return { inflight: `${prefix}:inflight`, tokens: `${prefix}:tokens:${billingPeriodOf(new Date()).month}` };
  };
  const remaining = async (who: Caller) => {
    const peeked = await limits.peek(who);
    if (!peeked.ok) throw new Error(peeked.error.message);
    return peeked.value.window.remaining;
  };
  const leasesHeld = (who: Caller) => redis.zrange(keysOf(who).inflight, '0', '-1');

  beforeAll(async () => {
    database = await createTestDatabase('gateway_test_quota_reserve');
    pool = createPool(database.url, () => undefined);
    const plans = new Map([[plan.id, plan]]);
    limits = new Limits(redis, plans, new UsageLedger(pool), 30_000);
    shortLived = new Limits(redis, plans, new UsageLedger(pool), shortLeaseTtlMs);
  });

  afterAll(async () => {
    redis.disconnect();
    await pool.end();
    await database.drop();
  });

  beforeEach(awayFromMinuteBoundary);

  it('reserves a lease without charging the window, then admits that same lease and charges it once', async () => {
    const who = caller();
    const reserved = leaseOf(await limits.reserve(who));
    expect(reserved.window).toEqual(expect.objectContaining({ limit: 4, remaining: 4 }));
    expect(reserved.limits.concurrency).toBe(2);
    expect(await leasesHeld(who)).toEqual([reserved.leaseId]);
    expect(await remaining(who)).toBe(4);

    // A live account without an allowance counter: it is rebuilt first, and the lease survives that.
    expect(await redis.get(keysOf(who).tokens)).toBeNull();
    const admitted = leaseOf(await limits.acquire(who, reserved.leaseId));
    expect(admitted.leaseId).toBe(reserved.leaseId);
    expect(admitted.window.remaining).toBe(3);
    expect(await redis.get(keysOf(who).tokens)).toBe('0');
    expect(await leasesHeld(who)).toEqual([reserved.leaseId]);

    expect(await limits.renew(who.accountId, 'live', reserved.leaseId)).toBe(true);
    await limits.release(who.accountId, 'live', reserved.leaseId, 30);
    expect(await leasesHeld(who)).toEqual([]);
    expect(await redis.get(keysOf(who).tokens)).toBe('30');
    expect(await remaining(who)).toBe(3);
  });

  it('refuses a reservation at the concurrency limit with the window, and counts reservations for acquire too', async () => {
    const who = caller({ environment: 'test' });
    const held = [leaseOf(await limits.reserve(who)), leaseOf(await limits.reserve(who))];
    const refused = await limits.reserve(who);
    expect(refused).toEqual({
      ok: false,
      error: expect.objectContaining({
        type: 'rate_limit_error',
        message: expect.stringMatching(/too many concurrent requests/i),
        retryAfterMs: 1000,
        rateLimit: expect.objectContaining({ limit: 4, remaining: 4 }),
      }),
    });
    // A request without a reservation competes for the same slots.
    expect(await limits.acquire(who)).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'rate_limit_error', retryAfterMs: 1000 }),
    });
    expect(await leasesHeld(who)).toHaveLength(2);

    await limits.release(who.accountId, 'test', held[0]!.leaseId, 0);
    expect(leaseOf(await limits.reserve(who)).window.remaining).toBe(4);
  });

  it('charges no per-minute slot for reservations, however many come and go', async () => {
    const who = caller({ overrides: { concurrency: 100n } as Caller['overrides'] });
    const reservations = await Promise.all(Array.from({ length: 12 }, () => limits.reserve(who)));
    for (const reserved of reservations) {
      await limits.release(who.accountId, 'live', leaseOf(reserved).leaseId, 0);
    }
    expect(await remaining(who)).toBe(4);
    expect(await leasesHeld(who)).toEqual([]);
    expect(await redis.keys(`q:{a:${who.accountId}:live}:released:*`)).toEqual([]);
  });

  it('frees a reserved lease in the same step that refuses it for the window, charging nothing', async () => {
    const who = caller({ environment: 'test' });
    for (let index = 0; index < plan.limits.requestsPerMinute; index += 1) {
      const lease = leaseOf(await limits.acquire(who));
      await limits.release(who.accountId, 'test', lease.leaseId, 0);
    }
    const reserved = leaseOf(await limits.reserve(who));
    expect(reserved.window.remaining).toBe(0);
    const refused = await limits.acquire(who, reserved.leaseId);
    expect(refused).toEqual({
      ok: false,
      error: expect.objectContaining({
        type: 'rate_limit_error',
        message: expect.stringMatching(/per minute/),
        rateLimit: expect.objectContaining({ remaining: 0 }),
      }),
    });
    expect(await leasesHeld(who)).toEqual([]);
    // The caller's release that follows every refusal finds nothing left to do.
    await limits.release(who.accountId, 'test', reserved.leaseId, 0);
    expect(await leasesHeld(who)).toEqual([]);
  });

  it('frees a reserved lease refused for the allowance, charging neither window nor allowance', async () => {
    const who = caller();
    const spent = leaseOf(await limits.acquire(who));
    await limits.release(who.accountId, 'live', spent.leaseId, 1000);
    const reserved = leaseOf(await limits.reserve(who));
    expect(await limits.acquire(who, reserved.leaseId)).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'quota_exceeded', message: expect.stringMatching(/allowance/) }),
    });
    expect(await leasesHeld(who)).toEqual([]);
    expect(await remaining(who)).toBe(3);
    expect(await redis.get(keysOf(who).tokens)).toBe('1000');
  });

  it('refuses a reserved lease that lapsed or was released, never bringing it back', async () => {
    const who = caller({ environment: 'test' });
    const lapsing = leaseOf(await shortLived.reserve(who));
    await waitUntil(
      async () => {
        const [seconds, micros] = await redis.time();
        const expiry = await redis.zscore(keysOf(who).inflight, lapsing.leaseId);
        return Number(expiry) < Number(seconds) * 1000 + Number(micros) / 1000;
      },
      { what: 'the reserved lease to lapse' },
    );
    const lapsed = await shortLived.acquire(who, lapsing.leaseId);
    expect(lapsed).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'overloaded_error', message: expect.stringMatching(/lapsed/) }),
    });

    const released = leaseOf(await limits.reserve(who));
    await limits.release(who.accountId, 'test', released.leaseId, 0);
    expect((await limits.acquire(who, released.leaseId)).ok).toBe(false);
    expect(await limits.acquire(who, 'never-reserved')).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'overloaded_error' }),
    });

    expect(await leasesHeld(who)).toEqual([]);
    expect(await remaining(who)).toBe(4);
  });
});
