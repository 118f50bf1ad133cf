import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type { PlanConfig } from '@gw/config';
import { createPool } from '@gw/db';
import type { Pool } from '@gw/db';
import { createMultiplexedClient, createServiceClient, startGrpcServer } from '@gw/grpc';
import type { MethodsOf, MultiplexedClient, RunningGrpcServer, ServiceClient } from '@gw/grpc';
import { commonv1, quotav1 } from '@gw/proto';
import { createTestDatabase } from '../../../test/support/database';
import type { TestDatabase } from '../../../test/support/database';
import { billingPeriodOf } from '@gw/vocabulary';
import { UsageLedger } from '../src/ledger';
import { Limits } from '../src/limits';
import { quotaService } from '../src/server';

const plan: PlanConfig = {
  id: 'pair',
  residency: ['eu'],
  models: 'all',
  limits: { requestsPerMinute: 1000, concurrency: 2, monthlyTokens: 1_000_000 },
  overage: { enabled: false, gbpPerMtok: 0 },
};

describe('QuotaService over its multiplexed Calls stream, against real Redis', () => {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
  let database: TestDatabase;
  let pool: Pool;
  let server: RunningGrpcServer;
  let multiplexed: MultiplexedClient<MethodsOf<typeof quotav1.QuotaService>>;
  let unary: ServiceClient<MethodsOf<typeof quotav1.QuotaService>> & { close(): void };

  const keyOf = (accountId: string) => ({
    keyId: 'key_calls',
    accountId,
    environment: commonv1.Environment.LIVE,
    plan: plan.id,
  });

  beforeAll(async () => {
    database = await createTestDatabase('gateway_test_quota_calls');
    pool = createPool(database.url, () => undefined);
    const limits = new Limits(redis, new Map([[plan.id, plan]]), new UsageLedger(pool), 30_000);
    server = await startGrpcServer({
      host: '127.0.0.1',
      port: 0,
      transport: { kind: 'plaintext' },
      onHandlerFailure: () => undefined,
      services: [quotaService(limits, () => {})],
    });
    const address = `127.0.0.1:${server.port}`;
    multiplexed = createMultiplexedClient(quotav1.QuotaService, {
      address,
      callee: 'quota',
      defaultTimeoutMs: 5_000,
      transport: { kind: 'plaintext' },
    });
    unary = createServiceClient(quotav1.QuotaService, {
      address,
      callee: 'quota',
      defaultTimeoutMs: 5_000,
      transport: { kind: 'plaintext' },
    });
  });

  afterAll(async () => {
    multiplexed.close();
    unary.close();
    await server.shutdown(1_000);
    redis.disconnect();
    await pool.end();
    await database.drop();
  });

  it('acquires, peeks, renews and releases; a release sent three times charges once', async () => {
    const accountId = `acct_${randomUUID()}`;
    const lease = await multiplexed.acquire({ key: keyOf(accountId), requestId: 'req_calls_1' });
    if (!lease.ok) throw new Error(lease.error.message);
    expect(lease.value.window?.remaining).toBe(999n);
    expect(lease.value.leaseTtlMs).toBe(30_000n);

    const peeked = await multiplexed.peek({ key: keyOf(accountId) });
    expect(peeked.ok && peeked.value.window?.remaining).toBe(999n);
    const ref = { accountId, environment: commonv1.Environment.LIVE, leaseId: lease.value.leaseId };
    expect(await multiplexed.renew(ref)).toEqual({ ok: true, value: expect.objectContaining({ held: true }) });

    for (let attempt = 0; attempt < 3; attempt += 1) {
      expect((await multiplexed.release({ ...ref, billableTokens: 120n })).ok).toBe(true);
    }
    const period = billingPeriodOf(new Date()).month;
    expect(await redis.get(`q:{a:${accountId}:live}:tokens:${period}`)).toBe('120');
    expect(await multiplexed.renew(ref)).toEqual({ ok: true, value: expect.objectContaining({ held: false }) });
  });

  it('reserves a lease, then admits it with Acquire and its lease_id, over the stream', async () => {
    const accountId = `acct_${randomUUID()}`;
    const reserved = await multiplexed.reserve({ key: keyOf(accountId), requestId: 'req_reserved' });
    if (!reserved.ok) throw new Error(reserved.error.message);
    expect(reserved.value.window?.remaining).toBe(1000n);
    expect(reserved.value.leaseTtlMs).toBe(30_000n);

    const admitted = await multiplexed.acquire({
      key: keyOf(accountId),
      requestId: 'req_reserved',
      leaseId: reserved.value.leaseId,
    });
    expect(admitted).toEqual({
      ok: true,
      value: expect.objectContaining({
        leaseId: reserved.value.leaseId,
        window: expect.objectContaining({ remaining: 999n }),
      }),
    });
    await multiplexed.reserve({ key: keyOf(accountId), requestId: 'req_second' });
    const refused = await multiplexed.reserve({ key: keyOf(accountId), requestId: 'req_third' });
    expect(refused).toEqual({
      ok: false,
      error: expect.objectContaining({
        type: 'rate_limit_error',
        retryAfterMs: 1000,
        rateLimit: expect.objectContaining({ remaining: 999 }),
      }),
    });
    expect(await unary.reserve({ key: keyOf(accountId), requestId: 'req_third' })).toEqual(refused);
  });

  it('refuses as the unary path does, window and all', async () => {
    const accountId = `acct_${randomUUID()}`;
    for (let slot = 0; slot < plan.limits.concurrency; slot += 1) {
      expect((await unary.acquire({ key: keyOf(accountId), requestId: `req_fill_${slot}` })).ok).toBe(true);
    }
    const refusedUnary = await unary.acquire({ key: keyOf(accountId), requestId: 'req_refused' });
    const refusedMultiplexed = await multiplexed.acquire({ key: keyOf(accountId), requestId: 'req_refused' });
    expect(refusedMultiplexed).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'rate_limit_error', retryAfterMs: 1000 }),
    });
    // Refusals charge nothing, so both saw the same window.
    expect(refusedMultiplexed).toEqual(refusedUnary);
  });
});
