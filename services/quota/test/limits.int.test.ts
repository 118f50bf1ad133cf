import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type { PlanConfig } from '@gw/config';
import { createPool } from '@gw/db';
import type { Pool } from '@gw/db';
import { createTestDatabase } from '../../../test/support/database';
import type { TestDatabase } from '../../../test/support/database';
import { billingPeriodOf } from '@gw/vocabulary';
import { UsageLedger } from '../src/ledger';
import { Limits } from '../src/limits';
import type { Caller } from '../src/limits';
import { waitForRoomInMinute } from '@gw/testing';

const plan: PlanConfig = {
  id: 'tiny',
  residency: ['eu'],
  models: 'all',
  limits: { requestsPerMinute: 5, concurrency: 3, monthlyTokens: 1000 },
  overage: { enabled: false, gbpPerMtok: 0 },
};
const generous: PlanConfig = { ...plan, id: 'generous', limits: { ...plan.limits, requestsPerMinute: 1000 } };

/** Waits out the last seconds of a clock minute, so a burst never straddles two windows. */
const awayFromMinuteBoundary = () => waitForRoomInMinute(1_500);

describe('Limits against real Redis and PostgreSQL', () => {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
  let database: TestDatabase;
  let pool: Pool;
  let limits: Limits;
  const caller = (overrides: Partial<Caller> = {}): Caller => ({
    accountId: `acct_${randomUUID()}`,
    environment: 'live',
    plan: 'tiny',
    overrides: undefined,
    ...overrides,
  });

  beforeAll(async () => {
    database = await createTestDatabase('gateway_test_quota');
    pool = createPool(database.url, () => undefined);
    limits = new Limits(
      redis,
      new Map([
        [plan.id, plan],
        [generous.id, generous],
      ]),
      new UsageLedger(pool),
      30_000,
    );
  });

  afterAll(async () => {
    redis.disconnect();
    await pool.end();
    await database.drop();
  });

  it('admits exactly the per-minute limit from a concurrent burst and refuses the rest with the window', async () => {
    const who = caller({ overrides: { concurrency: 100n } as Caller['overrides'] });
    await awayFromMinuteBoundary();
    const results = await Promise.all(
      Array.from({ length: 5 * plan.limits.requestsPerMinute }, () => limits.acquire(who)),
    );
    expect(results.filter((result) => result.ok)).toHaveLength(plan.limits.requestsPerMinute);
    for (const result of results) {
      if (result.ok) continue;
      expect(result.error.type).toBe('rate_limit_error');
      expect(result.error.rateLimit).toEqual(expect.objectContaining({ limit: 5, remaining: 0 }));
      expect(result.error.retryAfterMs).toBeGreaterThan(0);
      expect(result.error.retryAfterMs).toBeLessThanOrEqual(60_000);
    }
  });

  it('holds at most the concurrency limit in flight and frees a slot on release, without charging refusals', async () => {
    const who = caller({ environment: 'test' });
    await awayFromMinuteBoundary();
    const leases = [];
    for (let index = 0; index < plan.limits.concurrency; index += 1) {
      const lease = await limits.acquire(who);
      if (!lease.ok) throw new Error(lease.error.message);
      leases.push(lease.value);
    }
    const refused = await limits.acquire(who);
    expect(refused).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'rate_limit_error', retryAfterMs: 1000 }),
    });
    const peeked = await limits.peek(who);
    expect(peeked.ok && peeked.value.window.remaining).toBe(plan.limits.requestsPerMinute - plan.limits.concurrency);
    expect(await limits.renew(who.accountId, 'test', leases[0]!.leaseId)).toBe(true);
    await limits.release(who.accountId, 'test', leases[0]!.leaseId, 0);
    expect(await limits.renew(who.accountId, 'test', leases[0]!.leaseId)).toBe(false);
    expect((await limits.acquire(who)).ok).toBe(true);
  });

  it('counts the window down for each admitted request and resets on the minute', async () => {
    const who = caller();
    await awayFromMinuteBoundary();
    const first = await limits.acquire(who);
    const second = await limits.acquire(who);
    expect(first.ok && first.value.window.remaining).toBe(4);
    expect(second.ok && second.value.window.remaining).toBe(3);
    expect(first.ok && first.value.window.resetUnixMs % 60_000).toBe(0);
  });

  it('refuses with quota_exceeded once the allowance is used, unless overage is on, and always at the ceiling', async () => {
    const who = caller({ plan: 'generous' });
    const spend = async (tokens: number) => {
      const lease = await limits.acquire(who);
      if (!lease.ok) return lease;
      await limits.release(who.accountId, who.environment, lease.value.leaseId, tokens);
      return lease;
    };
    expect((await spend(999)).ok).toBe(true);
    expect((await spend(5)).ok).toBe(true);
    const exhausted = await limits.acquire(who);
    expect(exhausted).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'quota_exceeded', message: expect.stringMatching(/allowance/) }),
    });
    const withOverage = { ...who, overrides: { overage: true } as Caller['overrides'] };
    const over = await limits.acquire(withOverage);
    expect(over.ok).toBe(true);
    if (over.ok) await limits.release(who.accountId, 'live', over.value.leaseId, 1000);
    expect(await limits.acquire(withOverage)).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'quota_exceeded', message: expect.stringMatching(/ceiling/) }),
    });
  });

  it('never touches the allowance for test keys', async () => {
    const who = caller({ environment: 'test', plan: 'generous' });
    const lease = await limits.acquire(who);
    if (!lease.ok) throw new Error(lease.error.message);
    await limits.release(who.accountId, 'test', lease.value.leaseId, 5000);
    expect((await limits.acquire(who)).ok).toBe(true);
    const tokensKeys = await redis.keys(`q:{a:${who.accountId}:test}:tokens:*`);
    expect(tokensKeys).toEqual([]);
  });

  it('rebuilds a lost allowance counter from the metered usage before admitting', async () => {
    const who = caller({ plan: 'generous' });
    const period = billingPeriodOf(new Date());
    await pool.query(
      `INSERT INTO usage_aggregates (account_id, key_id, model, environment, period_start, requests, input_tokens,
         output_tokens, cache_read_input_tokens, cache_creation_input_tokens, billable_tokens)
       VALUES ($1, 'key_x', 'm', 'live', $2, 3, 0, 0, 0, 0, 600), ($1, 'key_y', 'm', 'live', $2, 2, 0, 0, 0, 0, 400)`,
      [who.accountId, period.startDay],
    );
    expect(await limits.acquire(who)).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'quota_exceeded' }),
    });
    expect(await redis.get(`q:{a:${who.accountId}:live}:tokens:${period.month}`)).toBe('1000');
  });
});
