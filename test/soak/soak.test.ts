import Redis from 'ioredis';
import { Client } from 'pg';
import { pace, waitUntil } from '@gw/testing';
import {
  chaosStack,
  chaosState,
  killService,
  restartInfra,
  startService,
  stopChaosStack,
  stopInfraComponent,
  stopService,
  superviseService,
} from '../chaos/chaos-stack';
import type { ChaosStack } from '../chaos/chaos-stack';
import { meteredTotals, waitUntilSettled } from '../chaos/metered';
import { MemorySampler, describeVerdict } from './memory';
import { paced, send } from './traffic';
import type { Outcome } from './traffic';

/**
 * The soak run (`make soak`, never part of `make test`): SOAK_MINUTES (30) of mixed traffic — completions,
 * streams, streams the client abandons, refusals (a bad key, an account over its limits), keys revoked while
 * their stream runs — against the chaos suite's stack of real processes, with a fault every few minutes
 * (Redis, Kafka and PostgreSQL restarted, the metering consumer killed, ingress restarted). At the end it prints
 * and checks: every usage event in PostgreSQL exactly once (against what the clients received), no quota lease
 * held in Redis, and every service's memory flat after warm-up: resident, heap and external memory read right after
 * a forced collection (through each process's inspector, which only the soak opens), growth within growthBound.
 * RSS between collections is printed, not judged: it follows V8's old-space floor, not what a process keeps.
 */

const minutes = Number(process.env.SOAK_MINUTES ?? 30);
const durationMs = minutes * 60_000;
/** Warm-up: a quarter of the run, at most 5 minutes. */
const warmupMs = Math.min(5 * 60_000, durationMs / 4);
/** Memory windows compared: half the warm-up, at most a minute. */
const windowMs = Math.min(60_000, warmupMs / 2);
/** A forced collection in every process twice per window. */
const collectEveryMs = windowMs / 2;
/** A fault every SOAK_FAULT_EVERY_S seconds (three minutes, or a sixth of a shorter run, so that all five happen). */
const faultEveryMs = Number(process.env.SOAK_FAULT_EVERY_S ?? Math.min(180, durationMs / 6_000)) * 1_000;

const faults = ['redis restart', 'kafka restart', 'postgres restart', 'metering SIGKILL', 'ingress restart'] as const;
type Fault = (typeof faults)[number];

let stack: ChaosStack;
const print = (line: string) => process.stdout.write(`soak: ${line}\n`);
const seconds = (ms: number) => `${(ms / 1_000).toFixed(1)} s`;

async function admin<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${stack.adminUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`admin ${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

async function account(name: string, limits: { requests_per_minute: number; concurrency: number }) {
  // The first call waits for the admin API to answer (its connection may be refused or reset until it does).
  const created = await waitUntil(() => admin<{ id: string }>('POST', '/accounts', { name, plan: 'pro' }), {
    what: 'the admin API to create an account',
    timeoutMs: 60_000,
    intervalMs: 500,
  });
  await admin('PATCH', `/accounts/${created.id}/limits`, limits);
  return created.id;
}

async function liveKey(accountId: string, name: string): Promise<{ id: string; key: string }> {
  return admin('POST', '/keys', {
    account_id: accountId,
    name,
    environment: 'live',
    residency: 'eu',
    privacy_mode: 'off',
  });
}

async function inject(fault: Fault): Promise<string> {
  const started = Date.now();
  switch (fault) {
    case 'redis restart':
      await stopInfraComponent('redis');
      await restartInfra();
      break;
    case 'kafka restart':
      await stopInfraComponent('kafka');
      await restartInfra();
      break;
    case 'postgres restart':
      await stopInfraComponent('postgres');
      await restartInfra();
      break;
    case 'metering SIGKILL':
      await killService(stack, 'metering');
      await startService(stack, 'metering');
      break;
    case 'ingress restart': {
      const { graceful } = await stopService(stack, 'ingress');
      await startService(stack, 'ingress');
      return `back in ${seconds(Date.now() - started)}${graceful ? '' : ' (did NOT exit on SIGTERM within 8 s: killed)'}`;
    }
  }
  return `back in ${seconds(Date.now() - started)}`;
}

/** Leases in quota's in-flight sets: all members, and those not yet expired (held). */
async function leases(redisUrl: string): Promise<{ held: number; members: number; sets: number }> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const now = Date.now();
    let held = 0;
    let members = 0;
    let sets = 0;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', 'q:*:inflight', 'COUNT', 500);
      cursor = next;
      for (const key of keys) {
        sets += 1;
        members += await redis.zcard(key);
        held += await redis.zcount(key, now, '+inf');
      }
    } while (cursor !== '0');
    return { held, members, sets };
  } finally {
    redis.disconnect();
  }
}

interface StoredEvent {
  eventId: string;
  accountId: string;
  billableTokens: number;
  outcome: string;
}

async function storedEvents(databaseUrl: string, accountIds: string[]): Promise<StoredEvent[]> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{
      event_id: string;
      account_id: string;
      billable_tokens: string;
      outcome: string;
    }>('SELECT event_id, account_id, billable_tokens::text, outcome FROM usage_events WHERE account_id = ANY ($1)', [
      accountIds,
    ]);
    return rows.map((row) => ({
      eventId: row.event_id,
      accountId: row.account_id,
      billableTokens: Number(row.billable_tokens),
      outcome: row.outcome,
    }));
  } finally {
    await client.end();
  }
}

const tally = (outcomes: Outcome[], key: (outcome: Outcome) => string) => {
  const counts: Record<string, number> = {};
  for (const outcome of outcomes) counts[key(outcome)] = (counts[key(outcome)] ?? 0) + 1;
  return counts;
};

describe('soak', () => {
  beforeAll(() => {
    stack = chaosStack();
  });

  afterAll(async () => {
    await stopChaosStack();
  }, 180_000);

  it(`${minutes} minutes of mixed traffic with a fault every ${faultEveryMs / 1_000} s: nothing lost, nothing held, memory flat`, async () => {
    const mainAccount = await account('soak-main', { requests_per_minute: 100_000, concurrency: 200 });
    const limitedAccount = await account('soak-limited', { requests_per_minute: 6, concurrency: 1 });
    const mainKey = await liveKey(mainAccount, 'soak-main');
    const limitedKey = await liveKey(limitedAccount, 'soak-limited');
    const outcomes: Outcome[] = [];
    const revocations = { done: 0, servedAfter: 0, refusedWithinMs: [] as number[] };
    const faultLog: string[] = [];

    const started = Date.now();
    const sampler = new MemorySampler(chaosState, started);
    sampler.start(5_000, collectEveryMs);
    const running = () => Date.now() - started < durationMs;
    const record = (outcome: Outcome): void => {
      outcomes.push(outcome);
    };
    const base = stack.baseUrl;

    const traffic = Promise.all([
      paced(2, 2, running, async () =>
        record(await send(base, mainKey.key, mainAccount, 'message', { stream: false })),
      ),
      paced(2, 1.5, running, async () =>
        record(await send(base, mainKey.key, mainAccount, 'stream', { stream: true, directives: 'sim:pace=20' })),
      ),
      paced(1, 0.5, running, async () =>
        record(
          await send(base, mainKey.key, mainAccount, 'disconnect', {
            stream: true,
            directives: 'sim:pace=50',
            maxTokens: 60 + Math.floor(Math.random() * 60),
            abandonAfter: 2 + Math.floor(Math.random() * 5),
          }),
        ),
      ),
      paced(1, 0.5, running, async () => {
        record(await send(base, 'sk-ant-api03-soak-not-a-key', mainAccount, 'bad-key', { stream: false }));
        record(await send(base, limitedKey.key, limitedAccount, 'over-limit', { stream: Math.random() < 0.5 }));
      }),
      // A key revoked while its stream runs; then its next request must be refused.
      paced(1, 1 / 15, running, async () => {
        const key = await liveKey(mainAccount, `soak-revoked-${revocations.done}`).catch(() => undefined);
        if (key === undefined) return; // the admin API is down during some faults
        const stream = send(base, key.key, mainAccount, 'revoked-stream', {
          stream: true,
          directives: 'sim:pace=100',
          maxTokens: 80,
        });
        await pace(1_000 + Math.floor(Math.random() * 2_000));
        const revoked = await admin('POST', `/keys/${key.id}/revoke`).then(
          () => true,
          () => false,
        );
        record(await stream);
        if (!revoked) return;
        revocations.done += 1;
        const revokedAt = Date.now();
        // Propagation takes a moment; a request answered 200 more than 5 s after the revocation is a failure.
        try {
          await waitUntil(
            async () => {
              const outcome = await send(base, key.key, mainAccount, 'revoked', { stream: false });
              record(outcome);
              if (outcome.status === 200 && Date.now() - revokedAt > 5_000) revocations.servedAfter += 1;
              return outcome.status === 401;
            },
            { what: 'the revoked key refused', timeoutMs: 15_000, intervalMs: 250 },
          );
          revocations.refusedWithinMs.push(Date.now() - revokedAt);
        } catch {
          revocations.servedAfter += 1;
        }
      }),
    ]);

    const faultsDone = (async () => {
      for (let index = 0; ; index += 1) {
        const due = started + (index + 1) * faultEveryMs;
        if (due > started + durationMs - 30_000) return;
        await pace(due - Date.now());
        const fault = faults[index % faults.length]!;
        const at = seconds(Date.now() - started);
        try {
          faultLog.push(`${at}: ${fault}, ${await inject(fault)}`);
        } catch (error) {
          faultLog.push(`${at}: ${fault} FAILED: ${(error as Error).message}`);
          await restartInfra().catch(() => undefined);
        }
        print(faultLog.at(-1)!);
      }
    })();

    await Promise.all([traffic, faultsDone]);
    const endMs = Date.now() - started;
    sampler.stop();
    await sampler.sample();
    await sampler.collect();

    // Metering exits when its consumer stops for good so that a supervisor restarts it; be that supervisor.
    const meteringExited = await superviseService(stack, 'metering');
    const ingressExited = await superviseService(stack, 'ingress');
    const accounts = [mainAccount, limitedAccount];
    const settledMain = await waitUntilSettled(stack, mainAccount, 180_000);
    const settledLimited = await waitUntilSettled(stack, limitedAccount, 60_000);

    // Exactly once: every request answered 200 has one event; no id twice; tokens as the client saw them.
    const events = await storedEvents(stack.infra.databaseUrl, accounts);
    const perId = new Map<string, StoredEvent[]>();
    for (const event of events) perId.set(event.eventId, [...(perId.get(event.eventId) ?? []), event]);
    const answered = outcomes.filter((outcome) => outcome.status === 200);
    const missing = answered.filter((outcome) => !perId.has(outcome.requestId!));
    const twice = [...perId.entries()].filter(([, stored]) => stored.length > 1).map(([id]) => id);
    const wrongTokens = answered.filter((outcome) => {
      const stored = perId.get(outcome.requestId!)?.[0];
      return outcome.ending === 'completed' && stored !== undefined && stored.billableTokens !== outcome.billableTokens;
    });
    const refusedBeforeModel = outcomes.filter((outcome) => outcome.status === 401 || outcome.status === 429);
    const billedRefusals = refusedBeforeModel.filter((outcome) => outcome.requestId && perId.has(outcome.requestId));
    const known = new Set(outcomes.flatMap((outcome) => (outcome.requestId ? [outcome.requestId] : [])));
    const unknownEvents = events.filter((event) => !known.has(event.eventId));
    const noAnswer = outcomes.filter((outcome) => outcome.ending === 'no-answer').length;
    const totals = await Promise.all(accounts.map((id) => meteredTotals(stack.infra.databaseUrl, id)));
    const aggregatesAgree = totals.every(
      (total) => total.aggregateBillable === total.eventBillable && total.aggregateRequests === total.events,
    );

    // No lease held: quota's in-flight sets hold nothing live once the traffic is over (leases of requests cut by
    // a fault expire within quota's lease TTL, 30 s).
    let leaseState = { held: -1, members: -1, sets: -1 };
    const leaseWaitStarted = Date.now();
    leaseState = await waitUntil(
      () => leases(stack.infra.redisUrl),
      { what: 'no quota lease held', timeoutMs: 60_000, intervalMs: 1_000 },
      (state) => state.held === 0,
    ).catch(() => leaseState);
    const leaseWait = Date.now() - leaseWaitStarted;
    leaseState = await leases(stack.infra.redisUrl);

    const memory = sampler.verdicts(warmupMs, windowMs, endMs);

    print(
      `ran ${seconds(endMs)}; warm-up ${seconds(warmupMs)}; memory windows ${seconds(windowMs)}; a forced collection every ${seconds(collectEveryMs)}`,
    );
    print(`faults (${faultLog.length}):`);
    for (const line of faultLog) print(`  ${line}`);
    print(`requests ${outcomes.length}: ${JSON.stringify(tally(outcomes, (o) => `${o.kind} ${o.ending}`))}`);
    print(
      `answers other than 200: ${JSON.stringify(
        tally(
          outcomes.filter((o) => o.status !== undefined && o.status !== 200),
          (o) => `${o.status} ${o.errorType ?? ''}`.trim(),
        ),
      )}`,
    );
    print(
      `usage: ${answered.length} requests answered 200, ${events.length} events in PostgreSQL (${perId.size} distinct ids); ` +
        `missing ${missing.length}, twice ${twice.length}, other tokens ${wrongTokens.length}; ` +
        `refusals (401/429) ${refusedBeforeModel.length}, billed ${billedRefusals.length}; ` +
        `events of requests the client got no answer for ${unknownEvents.length} (requests without an answer: ${noAnswer}); ` +
        `usage_aggregates agree with usage_events: ${aggregatesAgree}; settled in ${seconds(settledMain.waitedMs)}` +
        (settledMain.settled && settledLimited.settled ? '' : ' (NOT settled)'),
    );
    print(
      `revocations ${revocations.done}: refused within ${
        revocations.refusedWithinMs.length > 0 ? seconds(Math.max(...revocations.refusedWithinMs)) : '-'
      } at worst; served more than 5 s after revocation: ${revocations.servedAfter}`,
    );
    print(
      `quota leases: ${leaseState.held} held, ${leaseState.members} members in ${leaseState.sets} in-flight sets (waited ${seconds(leaseWait)})`,
    );
    print(
      'memory per process after a forced collection (MB, median over the window after warm-up → over the last window; ' +
        'bound max(16 MB, 25%) for rss, max(8 MB, 25%) for heap and external):',
    );
    for (const verdict of memory) print(`  ${describeVerdict(verdict)}`);
    if (meteringExited || ingressExited)
      print(`exited during the run: metering ${meteringExited}, ingress ${ingressExited}`);

    expect(answered.length).toBeGreaterThan(0);
    expect({
      missing: missing.map((outcome) => outcome.requestId),
      twice,
      wrongTokens: wrongTokens.map((outcome) => outcome.requestId),
      billedRefusals: billedRefusals.map((outcome) => outcome.requestId),
      unknownEventsBeyondUnanswered: Math.max(0, unknownEvents.length - noAnswer),
      aggregatesAgree,
      settled: settledMain.settled && settledLimited.settled,
      leasesHeld: leaseState.held,
      revokedServed: revocations.servedAfter,
      memoryGrew: memory.filter((verdict) => !verdict.ok).map((verdict) => verdict.name),
      faultsFailed: faultLog.filter((line) => line.includes('FAILED')),
    }).toEqual({
      missing: [],
      twice: [],
      wrongTokens: [],
      billedRefusals: [],
      unknownEventsBeyondUnanswered: 0,
      aggregatesAgree: true,
      settled: true,
      leasesHeld: 0,
      revokedServed: 0,
      memoryGrew: [],
      faultsFailed: [],
    });
  });
});
