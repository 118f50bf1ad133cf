import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type { PlanConfig } from '@gw/config';
import { Limits } from '../src/limits';

const plan: PlanConfig = {
  id: 'tiny',
  residency: ['eu'],
  models: 'all',
  limits: { requestsPerMinute: 5, concurrency: 3, monthlyTokens: 1000 },
  overage: { enabled: false, gbpPerMtok: 0 },
};

describe('Limits against real Redis', () => {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
  const limits = new Limits(redis, new Map([[plan.id, plan]]), 30_000);

  afterAll(() => redis.quit());

  it('admits exactly the per-minute limit from a concurrent burst and refuses the rest with the window', async () => {
    const account = `acct_${randomUUID()}`;
    const results = await Promise.all(
      Array.from({ length: 4 * plan.limits.requestsPerMinute }, async () => {
        const lease = await limits.acquire(account, 'live', plan.id);
        if (lease.ok) await limits.release(account, 'live', lease.value.leaseId);
        return lease;
      }),
    );
    const admitted = results.filter((result) => result.ok);
    const refused = results.filter((result) => !result.ok);
    // Concurrency refusals may happen too; none of them consume the per-minute window.
    expect(admitted.length).toBeLessThanOrEqual(plan.limits.requestsPerMinute);
    const rateLimited = refused.filter((result) => !result.ok && /per minute/.test(result.error.message));
    for (const result of rateLimited) {
      if (result.ok) continue;
      expect(result.error.type).toBe('rate_limit_error');
      expect(result.error.rateLimit).toEqual(expect.objectContaining({ limit: 5, remaining: 0 }));
      expect(result.error.retryAfterMs).toBeGreaterThan(0);
      expect(result.error.retryAfterMs).toBeLessThanOrEqual(60_000);
    }
    while ((await limits.acquire(account, 'live', plan.id)).ok) {
      // drain what concurrency refusals left unspent
    }
    const after = await limits.acquire(account, 'live', plan.id);
    expect(after).toEqual({ ok: false, error: expect.objectContaining({ type: 'rate_limit_error' }) });
  });

  it('holds at most the concurrency limit in flight and frees a slot on release', async () => {
    const account = `acct_${randomUUID()}`;
    const leases = [];
    for (let index = 0; index < plan.limits.concurrency; index += 1) {
      const lease = await limits.acquire(account, 'test', plan.id);
      expect(lease.ok).toBe(true);
      if (lease.ok) leases.push(lease.value);
    }
    const refused = await limits.acquire(account, 'test', plan.id);
    expect(refused).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'rate_limit_error', retryAfterMs: 1000 }),
    });
    expect(await limits.renew(account, 'test', leases[0]!.leaseId)).toBe(true);
    await limits.release(account, 'test', leases[0]!.leaseId);
    expect(await limits.renew(account, 'test', leases[0]!.leaseId)).toBe(false);
    expect((await limits.acquire(account, 'test', plan.id)).ok).toBe(true);
  });

  it('counts the window remaining down for each admitted request', async () => {
    const account = `acct_${randomUUID()}`;
    const first = await limits.acquire(account, 'live', plan.id);
    const second = await limits.acquire(account, 'live', plan.id);
    expect(first.ok && first.value.window.remaining).toBe(4);
    expect(second.ok && second.value.window.remaining).toBe(3);
    expect(first.ok && first.value.window.resetUnixMs % 60_000).toBe(0);
  });
});
