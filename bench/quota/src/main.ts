import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { z } from 'zod';
import { env, readEnv, runOrExit } from '@gw/config';
import type { PlanConfig } from '@gw/config';
import { createPool, migrateUp } from '@gw/db';
import { createMultiplexedClient, createServiceClient } from '@gw/grpc';
import type { MethodsOf, ServiceClient } from '@gw/grpc';
import { commonv1, quotav1 } from '@gw/proto';
import { KeyEnvironment, ResidencyTier } from '@gw/vocabulary';
// The quota service's own modules, measured as they run in the service.
import { UsageLedger } from '@gw/quota/dist/ledger';
import { Limits } from '@gw/quota/dist/limits';
import { measure, tableHeader, tableRow } from './measure';
import type { Bounds, CaseResult, CpuClock, DecisionTarget } from './measure';
import { startQuotaProcess } from './quota-process';

/**
 * Latency, throughput and CPU of the quota decision (Acquire, then Release of the lease) against the
 * local Redis: through the Limits class in this process, then over gRPC to a real quota process, with
 * a unary call each and multiplexed on one stream.
 * Not a test: `make bench-quota` runs it. Every case stops after BENCH_DECISIONS decisions or
 * BENCH_SECONDS seconds, whichever comes first.
 */

const loopback = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);
const loopbackUrl = (scheme: RegExp, what: string) =>
  z
    .string({ error: `expected a ${what} URL` })
    .regex(scheme, `expected a ${what} URL`)
    .refine((value) => loopback.has(new URL(value).hostname), 'the benchmark runs against loopback servers only');

const schema = z.object({
  REDIS_URL: loopbackUrl(/^redis:\/\//, 'redis://').default('redis://127.0.0.1:6379'),
  /** A database the benchmark may create its own throw-away database from. */
  DATABASE_URL: loopbackUrl(/^postgres(ql)?:\/\//, 'PostgreSQL'),
  BENCH_DECISIONS: env.positiveInt(20_000),
  BENCH_SECONDS: env.positiveInt(20),
  BENCH_CONCURRENCY: env.list('1,16,64').pipe(
    z
      .array(
        z
          .string()
          .regex(/^[1-9][0-9]*$/, 'expected positive integers')
          .transform(Number),
      )
      .min(1, 'expected at least one level'),
  ),
  /** Accounts each case spreads its decisions over. */
  BENCH_ACCOUNTS: env.positiveInt(64),
});

/** Admits everything the benchmark sends: every refusal is a finding. */
const plan: PlanConfig = {
  id: 'bench',
  residency: [ResidencyTier.eu],
  models: 'all',
  limits: { requestsPerMinute: 100_000_000, concurrency: 10_000, monthlyTokens: 1_000_000_000_000 },
  overage: { enabled: false, gbpPerMtok: 0 },
};
/** The smallest gateway configuration carrying the plan (JSON is YAML too). */
const gatewayConfig = {
  regions: [{ id: 'bench', jurisdiction: ResidencyTier.eu }],
  pools: [{ id: 'bench', region: 'bench', adapter: 'anthropic', endpoints: [{ url: 'http://127.0.0.1:9' }] }],
  models: [
    {
      alias: 'bench',
      displayName: 'Bench',
      createdAt: '2025-01-01T00:00:00Z',
      pricing: { inputGbpPerMtok: 1, outputGbpPerMtok: 1 },
      servedBy: [{ pool: 'bench', upstreamModel: 'bench' }],
    },
  ],
  plans: [plan],
};
const billableTokens = 100;
const print = (line: string) => process.stdout.write(`${line}\n`);

/** Steps run once, last registered first, on the way out: normal end, failure or Ctrl-C. */
class Cleanup {
  private readonly steps: { name: string; run: () => Promise<unknown> }[] = [];
  add(name: string, run: () => Promise<unknown>): void {
    this.steps.unshift({ name, run });
  }
  async runAll(): Promise<void> {
    for (const step of this.steps.splice(0)) {
      await step.run().catch((error: unknown) => {
        process.stderr.write(`cleanup: ${step.name} failed: ${(error as Error).message}\n`);
      });
    }
  }
}

function limitsTarget(limits: Limits): DecisionTarget {
  return {
    async acquire(accountId) {
      const lease = await limits.acquire({
        accountId,
        environment: KeyEnvironment.live,
        plan: plan.id,
        overrides: undefined,
      });
      return lease.ok ? { leaseId: lease.value.leaseId } : { refused: lease.error.type };
    },
    release: (accountId, leaseId) => limits.release(accountId, KeyEnvironment.live, leaseId, billableTokens),
  };
}

/** As limitsTarget, the way ingress admits a request: Reserve before the body, then Acquire with that lease. */
function reservedLimitsTarget(limits: Limits): DecisionTarget {
  return {
    async acquire(accountId) {
      const caller = { accountId, environment: KeyEnvironment.live, plan: plan.id, overrides: undefined };
      const reserved = await limits.reserve(caller);
      if (!reserved.ok) return { refused: reserved.error.type };
      const lease = await limits.acquire(caller, reserved.value.leaseId);
      return lease.ok ? { leaseId: lease.value.leaseId } : { refused: lease.error.type };
    },
    release: (accountId, leaseId) => limits.release(accountId, KeyEnvironment.live, leaseId, billableTokens),
  };
}

/** What the benchmark calls; the unary and the multiplexed client both have it. */
type QuotaCalls = Pick<ServiceClient<MethodsOf<typeof quotav1.QuotaService>>, 'reserve' | 'acquire' | 'release'>;

/** Over gRPC; with `reserved`, Reserve then Acquire with that lease, as ingress admits a request. */
function grpcTarget(client: QuotaCalls, { reserved = false } = {}): DecisionTarget {
  return {
    async acquire(accountId, index) {
      const key = { keyId: 'key_bench', accountId, environment: commonv1.Environment.LIVE, plan: plan.id };
      const requestId = `req_bench_${index}`;
      let leaseId: string | undefined;
      if (reserved) {
        const reservation = await client.reserve({ key, requestId });
        if (!reservation.ok) return { refused: reservation.error.type };
        leaseId = reservation.value.leaseId;
      }
      const lease = await client.acquire({ key, requestId, leaseId });
      return lease.ok ? { leaseId: lease.value.leaseId } : { refused: lease.error.type };
    },
    async release(accountId, leaseId) {
      const released = await client.release({
        accountId,
        environment: commonv1.Environment.LIVE,
        leaseId,
        billableTokens: BigInt(billableTokens),
      });
      if (!released.ok) throw new Error(`release: ${released.error.type}: ${released.error.message}`);
    },
  };
}

/** Runs one target at each concurrency: warm-up, then the measured decisions, a row each in the table. */
function caseRunner(settings: z.infer<typeof schema>, run: string, bounds: Bounds, results: CaseResult[]) {
  return async (name: string, target: DecisionTarget, serviceCpu?: CpuClock): Promise<void> => {
    for (const concurrency of settings.BENCH_CONCURRENCY) {
      if (bounds.stopped()) return;
      const accounts = Array.from(
        { length: settings.BENCH_ACCOUNTS },
        (_, index) => `bench_${run}_${name}_${concurrency}_${index}`,
      );
      // Warm up: the first decision of an account rebuilds its allowance counter from Postgres;
      // then some unmeasured decisions for the JIT and the connections.
      await Promise.all(
        accounts.map(async (accountId, index) => {
          const decision = await target.acquire(accountId, index);
          if ('leaseId' in decision) await target.release(accountId, decision.leaseId);
        }),
      );
      await measure(target, accounts, concurrency, { ...bounds, decisions: Math.min(1_000, bounds.decisions) });
      const result = await measure(target, accounts, concurrency, bounds, serviceCpu);
      if (result.decisions === 0) return;
      results.push(result);
      print(tableRow(name, result));
      if (result.firstFailure) print(`  first failure: ${result.firstFailure}`);
      if (result.refused.size > 0) print(`  refused: ${JSON.stringify(Object.fromEntries(result.refused))}`);
    }
  };
}

/** Redis with the quota service's client options; this run's keys are deleted at cleanup. */
async function connectRedis(redisUrl: string, cleanup: Cleanup, run: string): Promise<Redis> {
  // The same client options as the quota service's (services/quota/src/main.ts).
  const redis = new Redis(redisUrl, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2_000,
  });
  redis.on('error', () => undefined);
  cleanup.add('disconnect from Redis', async () => redis.disconnect());
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Redis at ${redisUrl} is not ready within 5 s`)), 5_000);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  // Live counters outlive the month; delete every key of this run's accounts.
  cleanup.add('delete the benchmark keys', async () => {
    let cursor = '0';
    do {
      const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `q:{a:bench_${run}_*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = nextCursor;
    } while (cursor !== '0');
  });
  return redis;
}

/** A throw-away, migrated database for this run, dropped at cleanup. */
async function scratchDatabase(adminUrl: string, cleanup: Cleanup, run: string) {
  // A throw-away, migrated database: the allowance counters are rebuilt from its (empty) usage.
  const database = `gateway_bench_quota_${run}`;
  const admin = createPool(adminUrl, () => undefined, 1);
  cleanup.add('close the admin pool', () => admin.end());
  await admin.query(`CREATE DATABASE ${database}`);
  cleanup.add(`drop database ${database}`, () => admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
  const databaseUrl = new URL(adminUrl);
  databaseUrl.pathname = `/${database}`;
  await migrateUp(databaseUrl.toString());
  const pool = createPool(databaseUrl.toString(), () => undefined);
  cleanup.add('close the pool', () => pool.end());
  return { pool, databaseUrl };
}

async function main(): Promise<void> {
  const settings = readEnv(schema);
  const run = randomBytes(4).toString('hex');
  const cleanup = new Cleanup();
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
    process.stderr.write('interrupted: finishing the current case, then cleaning up\n');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const bounds: Bounds = {
    decisions: settings.BENCH_DECISIONS,
    seconds: settings.BENCH_SECONDS,
    stopped: () => interrupted,
  };
  const results: CaseResult[] = [];

  try {
    const redis = await connectRedis(settings.REDIS_URL, cleanup, run);
    const { pool, databaseUrl } = await scratchDatabase(settings.DATABASE_URL, cleanup, run);

    const dir = await mkdtemp(join(tmpdir(), 'gw-bench-quota-'));
    cleanup.add('remove the temporary directory', () => rm(dir, { recursive: true, force: true }));
    const configPath = join(dir, 'gateway.yaml');
    await writeFile(configPath, JSON.stringify(gatewayConfig, null, 2));

    const info = await redis.info('server');
    const redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? '?';
    print(
      `quota decision benchmark: node ${process.version}, redis ${redisVersion} at ${settings.REDIS_URL}, ` +
        `${cpus().length} CPUs; up to ${bounds.decisions} decisions or ${bounds.seconds} s per case, ` +
        `${settings.BENCH_ACCOUNTS} accounts, live keys (allowance counted)`,
    );
    print(
      'latencies in ms; acq = Acquire (the decision), a+r = Acquire then Release; ' +
        'cpu = CPU ms per decision in this process (caller) and in the quota process',
    );
    print(tableHeader());

    const runCases = caseRunner(settings, run, bounds, results);

    // (a) In this process, straight to Redis: the cost of the scripts and the client.
    const limits = new Limits(redis, new Map([[plan.id, plan]]), new UsageLedger(pool), 30_000);
    await runCases('limits (in-process)', limitsTarget(limits));
    await runCases('limits reserved', reservedLimitsTarget(limits));

    // (b) Over gRPC to a real quota process: what ingress pays per request.
    if (!interrupted) {
      const quota = await startQuotaProcess({
        GATEWAY_CONFIG: configPath,
        REDIS_URL: settings.REDIS_URL,
        DATABASE_URL: databaseUrl.toString(),
      });
      cleanup.add('stop the quota process', () => quota.stop());
      const client = createServiceClient(quotav1.QuotaService, {
        address: quota.address,
        callee: 'quota',
        defaultTimeoutMs: 5_000,
        transport: { kind: 'plaintext' },
      });
      cleanup.add('close the gRPC client', async () => client.close());
      await runCases('grpc (quota process)', grpcTarget(client), quota.cpuSeconds);

      // (c) The same quota process, every call multiplexed on one stream.
      if (!interrupted) {
        const multiplexed = createMultiplexedClient(quotav1.QuotaService, {
          address: quota.address,
          callee: 'quota',
          defaultTimeoutMs: 5_000,
          transport: { kind: 'plaintext' },
        });
        cleanup.add('close the multiplexed client', async () => multiplexed.close());
        await runCases('grpc multiplexed', grpcTarget(multiplexed), quota.cpuSeconds);
        await runCases('multiplexed reserved', grpcTarget(multiplexed, { reserved: true }), quota.cpuSeconds);
      }
    }
  } finally {
    await cleanup.runAll();
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }

  const troubled = results.filter((result) => result.failed > 0 || result.refused.size > 0);
  if (interrupted) process.exitCode = 130;
  else if (troubled.length > 0) {
    process.stderr.write('some decisions were refused or failed: see the table\n');
    process.exitCode = 1;
  }
}

void runOrExit(main)
  .catch((error: unknown) => {
    process.stderr.write(`quota benchmark failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 1;
  })
  // Everything is closed by now; should a handle linger anyway, do not wait for it.
  .finally(() => setTimeout(() => process.exit(), 2_000).unref());
