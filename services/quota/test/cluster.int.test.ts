import { randomUUID } from 'node:crypto';
import { Cluster } from 'ioredis';
import type { PlanConfig } from '@gw/config';
import { createPool } from '@gw/db';
import type { Pool } from '@gw/db';
import type { Result } from '@gw/errors';
import { createTestDatabase } from '../../../test/support/database';
import type { TestDatabase } from '../../../test/support/database';
import { billingPeriodOf } from '@gw/vocabulary';
import { UsageLedger } from '../src/ledger';
import { Limits } from '../src/limits';
import type { Caller, Lease } from '../src/limits';
import { LocalRedisCluster } from './redis-cluster';
import { pace, waitForRoomInMinute } from '@gw/testing';

/**
 * The Limits scripts on a real three-master Redis Cluster: every key of one account carries the hash
 * tag {a:<account>:<env>}, so each script runs on one slot (no CROSSSLOT) while different accounts
 * spread over all the masters, and the decisions stay exact under concurrent load.
 */

const plan: PlanConfig = {
  id: 'tiny',
  residency: ['eu'],
  models: 'all',
  limits: { requestsPerMinute: 5, concurrency: 3, monthlyTokens: 1000 },
  overage: { enabled: false, gbpPerMtok: 0 },
};
const generous: PlanConfig = { ...plan, id: 'generous', limits: { ...plan.limits, requestsPerMinute: 100_000 } };
const overrides = (value: Record<string, unknown>) => value as Caller['overrides'];

/** Waits out the last seconds of a clock minute, so a burst never straddles two windows. */
const awayFromMinuteBoundary = () => waitForRoomInMinute(3_000);

function leaseOf(result: Result<Lease>): Lease {
  if (!result.ok) throw new Error(`expected an admission, got ${result.error.type}: ${result.error.message}`);
  return result.value;
}

describe('Limits on a real three-master Redis Cluster', () => {
  const cluster = new LocalRedisCluster([17101, 17102, 17103]);
  let redis: Cluster | undefined;
  let database: TestDatabase | undefined;
  let pool: Pool | undefined;
  let limits: Limits;
  const caller = (overridden: Partial<Caller> = {}): Caller => ({
    accountId: `acct_${randomUUID()}`,
    environment: 'live',
    plan: 'generous',
    overrides: undefined,
    ...overridden,
  });
  const keysOf = (who: Caller) => {
    const prefix = `q:{a:${who.accountId}:${who.environment}}`;
    return {
      rpm: `${prefix}:rpm`,
      inflight: `${prefix}:inflight`,
      tokens: `${prefix}:tokens:${billingPeriodOf(new Date()).month}`,
    };
  };

  beforeAll(async () => {
    const [started, created] = await Promise.allSettled([
      cluster.start(),
      createTestDatabase('gateway_test_quota_cluster').then((value) => (database = value)),
    ]);
    if (started.status === 'rejected') throw started.reason;
    if (created.status === 'rejected') throw created.reason;
    pool = createPool(database!.url, () => undefined);
    redis = new Cluster(cluster.nodes, { redisOptions: { maxRetriesPerRequest: 1, connectTimeout: 2_000 } });
    const connected = redis;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the cluster client was not ready within 10 s')), 10_000);
      connected.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    limits = new Limits(
      redis,
      new Map([
        [plan.id, plan],
        [generous.id, generous],
      ]),
      new UsageLedger(pool),
      30_000,
    );
  }, 45_000);

  afterAll(async () => {
    // Every step runs even when an earlier one (or beforeAll) failed; the first failure is reported.
    const steps = [
      async () => redis?.disconnect(),
      async () => pool?.end(),
      async () => database?.drop(),
      () => cluster.stop(),
    ];
    const outcomes = [];
    for (const step of steps)
      outcomes.push(
        await step().then(
          () => undefined,
          (error: unknown) => error,
        ),
      );
    const failure = outcomes.find((outcome) => outcome !== undefined);
    if (failure !== undefined) throw failure;
  }, 20_000);

  it('runs a real cluster, where a script over two accounts would fail with CROSSSLOT', async () => {
    const masters = redis!.nodes('master');
    expect(masters).toHaveLength(3);
    // The check below is live: the cluster refuses a script whose keys are in different slots.
    const [a, b] = [keysOf(caller()), keysOf(caller())];
    const slotOf = (key: string) => redis!.cluster('KEYSLOT', key) as Promise<number>;
    expect(await slotOf(a.rpm)).not.toBe(await slotOf(b.rpm));
    await expect(redis!.eval("return redis.call('EXISTS', KEYS[1], KEYS[2])", 2, a.rpm, b.rpm)).rejects.toThrow(
      /CROSSSLOT/,
    );
  });

  it('runs acquire (with the allowance), peek, renew and release for accounts spread over every master', async () => {
    const callers = Array.from({ length: 48 }, (_, index) =>
      caller({ environment: index % 4 === 0 ? 'test' : 'live' }),
    );
    await awayFromMinuteBoundary();
    await Promise.all(
      callers.map(async (who) => {
        // For a live key this is the rebuild path too: no counter yet, so it is rebuilt (to 0) first.
        const lease = leaseOf(await limits.acquire(who));
        expect(lease.window).toEqual(expect.objectContaining({ limit: 100_000, remaining: 99_999 }));
        const peeked = await limits.peek(who);
        expect(peeked.ok && peeked.value.window.remaining).toBe(99_999);
        expect(await limits.renew(who.accountId, who.environment, lease.leaseId)).toBe(true);
        await limits.release(who.accountId, who.environment, lease.leaseId, 120);
        expect(await limits.renew(who.accountId, who.environment, lease.leaseId)).toBe(false);
        const keys = keysOf(who);
        expect(await redis!.zcard(keys.inflight)).toBe(0);
        // Test traffic never touches the allowance; live traffic is charged on release.
        expect(await redis!.get(keys.tokens)).toBe(who.environment === 'live' ? '120' : null);
      }),
    );

    // Each account's keys sit together on one master, and the accounts cover all three masters.
    const mastersOf = new Map<string, Set<string>>();
    for (const node of redis!.nodes('master')) {
      const name = `${node.options.host}:${node.options.port}`;
      for (const key of await node.keys('q:{a:*')) {
        const tag = key.slice(key.indexOf('{'), key.indexOf('}') + 1);
        mastersOf.set(tag, (mastersOf.get(tag) ?? new Set()).add(name));
      }
    }
    for (const who of callers) {
      expect(mastersOf.get(`{a:${who.accountId}:${who.environment}}`)?.size).toBe(1);
    }
    const used = new Set(callers.map((who) => [...mastersOf.get(`{a:${who.accountId}:${who.environment}}`)!][0]));
    expect(used.size).toBe(3);
  });

  it('refuses once the allowance is used, admits with overage, and stops at the hard ceiling', async () => {
    await Promise.all(
      Array.from({ length: 12 }, async () => {
        const who = caller();
        const spend = async (as: Caller, tokens: number) => {
          const lease = leaseOf(await limits.acquire(as));
          await limits.release(as.accountId, as.environment, lease.leaseId, tokens);
        };
        await spend(who, 999);
        await spend(who, 5);
        expect(await limits.acquire(who)).toEqual({
          ok: false,
          error: expect.objectContaining({ type: 'quota_exceeded', message: expect.stringMatching(/allowance/) }),
        });
        const withOverage = { ...who, overrides: overrides({ overage: true }) };
        await spend(withOverage, 1000);
        expect(await redis!.get(keysOf(who).tokens)).toBe('2004');
        expect(await limits.acquire(withOverage)).toEqual({
          ok: false,
          error: expect.objectContaining({ type: 'quota_exceeded', message: expect.stringMatching(/ceiling/) }),
        });
      }),
    );
  });

  it('rebuilds lost allowance counters from the metered usage, on every master', async () => {
    const period = billingPeriodOf(new Date());
    const callers = Array.from({ length: 24 }, () => caller());
    // Account i has used i * 100 tokens (two rows each): from 1,000 on, the allowance is used up.
    const usedBy = (index: number) => index * 100;
    await pool!.query(
      `INSERT INTO usage_aggregates (account_id, key_id, model, environment, period_start, requests, input_tokens,
         output_tokens, cache_read_input_tokens, cache_creation_input_tokens, billable_tokens)
       SELECT account_id, key_id, 'm', 'live', $2::date, 1, 0, 0, 0, 0, tokens
       FROM unnest($1::text[], $3::bigint[]) AS u(account_id, tokens)
       CROSS JOIN (VALUES ('key_x'), ('key_y')) AS k(key_id)`,
      [callers.map((who) => who.accountId), period.startDay, callers.map((_, index) => usedBy(index) / 2)],
    );
    // Several decisions at once for each account: one rebuild wins (SET NX), and all of them agree.
    const decisions = await Promise.all(
      callers.map((who) => Promise.all([limits.acquire(who), limits.acquire(who), limits.acquire(who)])),
    );
    decisions.forEach((ofAccount, index) => {
      for (const decision of ofAccount) {
        if (usedBy(index) >= plan.limits.monthlyTokens) {
          expect(decision).toEqual({ ok: false, error: expect.objectContaining({ type: 'quota_exceeded' }) });
        } else {
          expect(decision.ok).toBe(true);
        }
      }
    });
    for (const [index, who] of callers.entries()) {
      expect(await redis!.get(keysOf(who).tokens)).toBe(String(usedBy(index)));
    }
  });

  it('admits exactly the per-minute limit to each of several accounts bursting at once', async () => {
    const accounts = Array.from({ length: 12 }, (_, index) =>
      caller({
        plan: 'tiny',
        environment: index % 2 === 0 ? 'live' : 'test',
        overrides: overrides({ concurrency: 1000n }),
      }),
    );
    const attempts = accounts.flatMap((who) => Array.from({ length: 5 * plan.limits.requestsPerMinute }, () => who));
    // Interleave the accounts' attempts so that every master serves several bursts at the same time.
    attempts.sort(() => Math.random() - 0.5);
    await awayFromMinuteBoundary();
    const results = await Promise.all(attempts.map(async (who) => ({ who, result: await limits.acquire(who) })));
    for (const who of accounts) {
      const mine = results.filter((entry) => entry.who === who).map((entry) => entry.result);
      expect(mine.filter((result) => result.ok)).toHaveLength(plan.limits.requestsPerMinute);
      for (const result of mine) {
        if (result.ok) continue;
        expect(result.error.type).toBe('rate_limit_error');
        expect(result.error.rateLimit).toEqual(expect.objectContaining({ limit: 5, remaining: 0 }));
      }
      const peeked = await limits.peek(who);
      expect(peeked.ok && peeked.value.window.remaining).toBe(0);
    }
  });

  it('never holds more leases than the concurrency limit, and frees every one on release', async () => {
    const limit = plan.limits.concurrency;
    const accounts = Array.from({ length: 9 }, (_, index) =>
      caller({
        plan: 'generous',
        environment: index % 3 === 0 ? 'test' : 'live',
        overrides: overrides({ concurrency: BigInt(limit), overage: true }),
      }),
    );
    const stats = new Map(accounts.map((who) => [who, { inFlight: 0, most: 0, admitted: 0, refused: 0 }]));
    const worker = async (who: Caller) => {
      const stat = stats.get(who)!;
      for (let attempt = 0; attempt < 12; attempt += 1) {
        const result = await limits.acquire(who);
        if (!result.ok) {
          expect(result.error).toEqual(
            expect.objectContaining({ type: 'rate_limit_error', message: expect.stringMatching(/concurrent/) }),
          );
          stat.refused += 1;
          await pace(1 + Math.random() * 3);
          continue;
        }
        stat.admitted += 1;
        stat.inFlight += 1;
        stat.most = Math.max(stat.most, stat.inFlight);
        await pace(2 + Math.random() * 8);
        // Counted out before the release is sent: a count above the limit would mean Redis held more.
        stat.inFlight -= 1;
        await limits.release(who.accountId, who.environment, result.value.leaseId, 1);
      }
    };
    await awayFromMinuteBoundary();
    await Promise.all(accounts.flatMap((who) => Array.from({ length: 4 * limit }, () => worker(who))));
    for (const who of accounts) {
      const stat = stats.get(who)!;
      expect(stat.most).toBe(limit);
      expect(stat.refused).toBeGreaterThan(0);
      expect(await redis!.zcard(keysOf(who).inflight)).toBe(0);
      if (who.environment === 'live') expect(await redis!.get(keysOf(who).tokens)).toBe(String(stat.admitted));
    }
  });

  it('reserves, admits and frees reserved leases on every master, never holding more than the concurrency', async () => {
    const limit = plan.limits.concurrency;
    const accounts = Array.from({ length: 9 }, (_, index) =>
      caller({
        environment: index % 3 === 0 ? 'test' : 'live',
        overrides: overrides({ concurrency: BigInt(limit), overage: true }),
      }),
    );
    const stats = new Map(accounts.map((who) => [who, { inFlight: 0, most: 0, admitted: 0, refused: 0 }]));
    const worker = async (who: Caller) => {
      const stat = stats.get(who)!;
      for (let attempt = 0; attempt < 12; attempt += 1) {
        const reserved = await limits.reserve(who);
        if (!reserved.ok) {
          expect(reserved.error).toEqual(
            expect.objectContaining({ type: 'rate_limit_error', message: expect.stringMatching(/concurrent/) }),
          );
          stat.refused += 1;
          await pace(1 + Math.random() * 3);
          continue;
        }
        stat.inFlight += 1;
        stat.most = Math.max(stat.most, stat.inFlight);
        // The body arrives: the reserved lease already counts.
        await pace(1 + Math.random() * 4);
        leaseOf(await limits.acquire(who, reserved.value.leaseId));
        stat.admitted += 1;
        await pace(1 + Math.random() * 4);
        stat.inFlight -= 1;
        await limits.release(who.accountId, who.environment, reserved.value.leaseId, 1);
      }
    };
    await awayFromMinuteBoundary();
    await Promise.all(accounts.flatMap((who) => Array.from({ length: 4 * limit }, () => worker(who))));
    for (const who of accounts) {
      const stat = stats.get(who)!;
      expect(stat.most).toBe(limit);
      expect(stat.refused).toBeGreaterThan(0);
      expect(await redis!.zcard(keysOf(who).inflight)).toBe(0);
      // Only admissions took a per-minute slot, never the reservations refused or granted.
      const peeked = await limits.peek(who);
      expect(peeked.ok && peeked.value.window.remaining).toBe(generous.limits.requestsPerMinute - stat.admitted);
      if (who.environment === 'live') expect(await redis!.get(keysOf(who).tokens)).toBe(String(stat.admitted));
    }
  });
});
