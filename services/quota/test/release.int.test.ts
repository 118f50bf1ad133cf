import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type { PlanConfig } from '@gw/config';
import { createPool } from '@gw/db';
import type { Pool } from '@gw/db';
import { waitUntil } from '@gw/testing';
import { createTestDatabase } from '../../../test/support/database';
import type { TestDatabase } from '../../../test/support/database';
import { billingPeriodOf } from '@gw/vocabulary';
import { UsageLedger } from '../src/ledger';
import { Limits } from '../src/limits';
import type { Caller } from '../src/limits';

const plan: PlanConfig = {
  id: 'roomy',
  residency: ['eu'],
  models: 'all',
  limits: { requestsPerMinute: 1000, concurrency: 100, monthlyTokens: 1_000_000 },
  overage: { enabled: false, gbpPerMtok: 0 },
};
/** Short enough for a test to watch a lease expire. */
const shortLeaseTtlMs = 150;

describe('Release against real Redis', () => {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
  let database: TestDatabase;
  let pool: Pool;
  let limits: Limits;
  let shortLived: Limits;
  const caller = (environment: Caller['environment'] = 'live'): Caller => ({
    accountId: `acct_${randomUUID()}`,
    environment,
    plan: plan.id,
    overrides: undefined,
  });
  const tokensUsed = async (who: Caller) =>
    Number(await redis.get(`q:{a:${who.accountId}:${who.environment}}:tokens:${billingPeriodOf(new Date()).month}`));
  const admitted = async (limitsOf: Limits, who: Caller) => {
    const lease = await limitsOf.acquire(who);
    if (!lease.ok) throw new Error(lease.error.message);
    return lease.value.leaseId;
  };

  beforeAll(async () => {
    database = await createTestDatabase('gateway_test_quota_release');
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

  it('charges a lease released three times once, and frees its slot', async () => {
    const who = caller();
    const leaseId = await admitted(limits, who);
    for (let attempt = 0; attempt < 3; attempt += 1) await limits.release(who.accountId, 'live', leaseId, 250);
    expect(await tokensUsed(who)).toBe(250);
    expect(await limits.renew(who.accountId, 'live', leaseId)).toBe(false);
  });

  it('charges once when the retries of a release arrive together', async () => {
    const who = caller();
    const leaseId = await admitted(limits, who);
    await Promise.all(Array.from({ length: 3 }, () => limits.release(who.accountId, 'live', leaseId, 70)));
    expect(await tokensUsed(who)).toBe(70);
  });

  it('still charges a lease that expired before its release, once, whether or not it was swept away', async () => {
    const who = caller();
    const swept = await admitted(shortLived, who);
    const unswept = await admitted(shortLived, who);
    const inflight = `q:{a:${who.accountId}:live}:inflight`;
    // Watched without renewing: a renewal of a lease still held would extend it.
    await waitUntil(
      async () => {
        const [seconds, micros] = await redis.time();
        const expiries = await Promise.all([swept, unswept].map((leaseId) => redis.zscore(inflight, leaseId)));
        return Math.max(...expiries.map(Number)) < Number(seconds) * 1000 + Number(micros) / 1000;
      },
      { what: 'the short leases to expire' },
    );
    // Once expired, a lease is reported lost and a renewal does not bring it back.
    expect(await shortLived.renew(who.accountId, 'live', unswept)).toBe(false);
    expect(await shortLived.renew(who.accountId, 'live', swept)).toBe(false);
    // The next admission sweeps expired leases out of the in-flight set; `unswept` is released before it.
    for (let attempt = 0; attempt < 3; attempt += 1) await shortLived.release(who.accountId, 'live', unswept, 40);
    await admitted(shortLived, who);
    expect(await redis.zscore(inflight, swept)).toBeNull();
    for (let attempt = 0; attempt < 3; attempt += 1) await shortLived.release(who.accountId, 'live', swept, 300);
    expect(await tokensUsed(who)).toBe(340);
  });

  it('leaves no marker for test traffic, which charges nothing', async () => {
    const who = caller('test');
    const leaseId = await admitted(limits, who);
    await limits.release(who.accountId, 'test', leaseId, 500);
    expect(await redis.keys(`q:{a:${who.accountId}:test}:released:*`)).toEqual([]);
  });
});
