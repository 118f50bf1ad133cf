import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import {
  chaosStack,
  chaosState,
  killService,
  restartInfra,
  servicePid,
  startService,
  stopChaosStack,
  stopInfraComponent,
  stopService,
  superviseService,
} from './chaos-stack';
import type { ChaosStack } from './chaos-stack';
import { Load, sumBillable } from './load';
import type { CompletedRequest, LoadResult } from './load';
import { meteredEvents, meteringDuplicates, spoolDepth, waitUntilSettled } from './metered';

/**
 * Metering loses nothing and counts nothing twice under faults. For each fault, the billable
 * tokens of every request that returned 200 (from the responses' usage) must equal the account's
 * totals in Postgres, in usage_aggregates and in usage_events alike, with one event per request.
 * Runs on a stack of its own (chaos-stack.ts): it stops and starts PostgreSQL, Kafka and services.
 */

let stack: ChaosStack;

const print = (line: string) => process.stdout.write(`${line}\n`);

async function admin<T>(method: string, path: string, body: unknown): Promise<T> {
  const response = await fetch(`${stack.adminUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`admin ${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

/** A fresh pro account (limits raised so that the load is never refused by them) and its live EU key. */
async function liveAccount(name: string): Promise<{ accountId: string; key: string }> {
  const account = await admin<{ id: string }>('POST', '/accounts', { name, plan: 'pro' });
  await admin('PATCH', `/accounts/${account.id}/limits`, { requests_per_minute: 100_000, concurrency: 200 });
  const key = await admin<{ key: string }>('POST', '/keys', {
    account_id: account.id,
    name,
    environment: 'live',
    residency: 'eu',
    privacy_mode: 'off',
  });
  return { accountId: account.id, key: key.key };
}

function load(key: string, requests: number, ratePerSecond = 12): Load {
  return new Load({ baseUrl: stack.baseUrl, apiKey: key, requests, concurrency: 12, ratePerSecond });
}

const seconds = (ms: number) => `${(ms / 1_000).toFixed(1)} s`;

/** The metering process and its count of absorbed redeliveries, at the start of a fault. */
interface MeteringSnapshot {
  pid: number | undefined;
  duplicates: number | undefined;
}

async function meteringSnapshot(): Promise<MeteringSnapshot> {
  return { pid: await servicePid(stack, 'metering'), duplicates: await meteringDuplicates(stack) };
}

/** Redelivered events metering recognised and ignored during the fault. */
async function duplicatesNote(before: MeteringSnapshot): Promise<string> {
  const after = await meteringSnapshot();
  if (after.duplicates === undefined) return 'metering duplicates unknown';
  if (after.pid === before.pid && before.duplicates !== undefined) {
    return `${after.duplicates - before.duplicates} redelivered events ignored by metering (all accounts)`;
  }
  return `${after.duplicates} redelivered events ignored by the restarted metering (all accounts)`;
}

/**
 * Waits until everything is metered, prints the fault's line and checks: sums equal exactly, one
 * event per completed request (same ids, same tokens), no event id twice.
 */
async function expectExactlyMetered(
  fault: string,
  accountId: string,
  results: LoadResult[],
  before: MeteringSnapshot,
  notes: string[] = [],
): Promise<void> {
  const completed: CompletedRequest[] = results.flatMap((result) => result.completed);
  const issued = results.reduce((sum, result) => sum + result.issued, 0);
  const failures: Record<string, number> = {};
  for (const result of results) {
    for (const [kind, count] of Object.entries(result.failures)) failures[kind] = (failures[kind] ?? 0) + count;
  }
  // Metering rides out these faults (kafkajs restarts its consumer, failed chunks are redelivered):
  // an exit is a failure of its own, checked last so that the totals are still compared.
  const meteringExited = await superviseService(stack, 'metering');
  if (meteringExited) notes.push(`METERING EXITED during the fault (see ${join(chaosState.logs, 'metering.log')})`);
  const settled = await waitUntilSettled(stack, accountId, 60_000);
  notes.push(await duplicatesNote(before));
  const clientSum = sumBillable(completed);
  const { totals } = settled;

  const events = await meteredEvents(stack.infra.databaseUrl, accountId);
  const metered = new Map(events.map((event) => [event.eventId, event]));
  const expected = new Map(completed.map((request) => [request.requestId, request]));
  const missing = completed.filter((request) => !metered.has(request.requestId));
  const extra = events.filter((event) => !expected.has(event.eventId));
  const different = completed.filter((request) => {
    const event = metered.get(request.requestId);
    return event !== undefined && event.billableTokens !== request.billableTokens;
  });

  print(
    `chaos ${fault}: completed ${completed.length} of ${issued} requests, client-side sum ${clientSum}, ` +
      `postgres usage_aggregates sum ${totals.aggregateBillable} (${totals.aggregateRequests} requests), ` +
      `usage_events sum ${totals.eventBillable} (${totals.events} rows, ${totals.distinctEventIds} distinct ids); ` +
      `settled ${settled.settled ? 'in' : 'NOT within'} ${seconds(settled.waitedMs)}` +
      (Object.keys(failures).length > 0 ? `; not completed: ${JSON.stringify(failures)}` : '') +
      (notes.length > 0 ? `; ${notes.join('; ')}` : ''),
  );
  if (missing.length + extra.length + different.length > 0) {
    print(
      `chaos ${fault}: MISMATCH: ${missing.length} completed requests not metered ` +
        `${JSON.stringify(missing.slice(0, 5))}, ${extra.length} events of no completed request ` +
        `${JSON.stringify(extra.slice(0, 5))}, ${different.length} with other tokens ${JSON.stringify(different.slice(0, 5))}`,
    );
  }

  expect(completed.length).toBeGreaterThan(0);
  expect({
    aggregateBillable: totals.aggregateBillable,
    eventBillable: totals.eventBillable,
    aggregateRequests: totals.aggregateRequests,
    events: totals.events,
    distinctEventIds: totals.distinctEventIds,
  }).toEqual({
    aggregateBillable: clientSum,
    eventBillable: clientSum,
    aggregateRequests: completed.length,
    events: completed.length,
    distinctEventIds: completed.length,
  });
  expect({ missing, extra, different }).toEqual({ missing: [], extra: [], different: [] });
  expect(settled.settled).toBe(true);
  expect({ meteringExited }).toEqual({ meteringExited: false });
}

/** Polls until the account has an aggregate row (its first events are metered). */
async function waitForAggregateRow(client: Client, accountId: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await client.query('SELECT 1 FROM usage_aggregates WHERE account_id = $1', [accountId])).rowCount === 0) {
    if (Date.now() > deadline) throw new Error(`no usage metered for ${accountId} within ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** The backend of the session that waits for the lock this client holds (metering's writer). */
async function waitForBlockedWriter(client: Client, timeoutMs: number): Promise<{ pid: number; waitEvent: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await client.query<{ pid: number; waitEvent: string }>(
      'SELECT pid, wait_event AS "waitEvent" FROM pg_stat_activity WHERE pg_backend_pid() = ANY (pg_blocking_pids(pid))',
    );
    if (rows[0]) return rows[0];
    if (Date.now() > deadline) throw new Error(`metering did not reach the locked aggregate within ${timeoutMs} ms`);
    await sleep(50);
  }
}

async function waitForBackendEnd(client: Client, backend: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while ((await client.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [backend])).rowCount !== 0) {
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
  return true;
}

async function spoolSegments(): Promise<number> {
  const names = await readdir(join(chaosState.root, 'spool', 'ingress')).catch(() => [] as string[]);
  return names.filter((name) => name !== 'LOCK').length;
}

describe('metering under faults: every completed request counted exactly once', () => {
  // The global setup started the stack; this file stops it, whatever happened (the global teardown
  // stops it again if this file never ran).
  beforeAll(() => {
    stack = chaosStack();
  });

  afterAll(async () => {
    await stopChaosStack();
  }, 180_000);

  // A fault test that failed half-way may have left a component down: every test starts whole.
  beforeEach(async () => {
    await restartInfra();
    await superviseService(stack, 'metering');
    await superviseService(stack, 'ingress');
  }, 180_000);

  it('(a) the metering consumer killed with SIGKILL in the middle of a batch', async () => {
    const { accountId, key } = await liveAccount('chaos-a');
    const before = await meteringSnapshot();
    const traffic = load(key, 200);
    const running = traffic.run();
    await traffic.whenIssued(50);

    // Hold the account's aggregate row, so that metering's next batch stops inside its transaction
    // (events inserted, aggregates not yet), and kill it there: the batch is provably in flight.
    const blocker = new Client({ connectionString: stack.infra.databaseUrl });
    await blocker.connect();
    let killed: { pid: number; backend: number; waitEvent: string };
    let backendEnded: boolean;
    try {
      await waitForAggregateRow(blocker, accountId, 20_000);
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM usage_aggregates WHERE account_id = $1 FOR UPDATE', [accountId]);
      const waiting = await waitForBlockedWriter(blocker, 20_000);
      const pid = await killService(stack, 'metering');
      killed = { pid, backend: waiting.pid, waitEvent: waiting.waitEvent };
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
    }
    try {
      // The waiting transaction was the killed process's: once it may go on, its backend finds the
      // client gone and ends, rolling the batch back.
      backendEnded = await waitForBackendEnd(blocker, killed.backend, 10_000);
    } finally {
      await blocker.end();
    }
    const restartStarted = Date.now();
    await startService(stack, 'metering');
    const restartMs = Date.now() - restartStarted;
    const result = await running;
    expect(backendEnded).toBe(true);
    await expectExactlyMetered('(a) metering SIGKILL mid-batch', accountId, [result], before, [
      `killed pid ${killed.pid} while its transaction waited (backend ${killed.backend} waiting on ${killed.waitEvent}, ` +
        `${backendEnded ? 'ended after the kill' : 'STILL RUNNING after the kill'})`,
      `new metering serving after ${seconds(restartMs)}`,
    ]);
  }, 240_000);

  it('(b) the Kafka broker restarted under load', async () => {
    const { accountId, key } = await liveAccount('chaos-b');
    const before = await meteringSnapshot();
    const traffic = load(key, 240);
    const running = traffic.run();
    await traffic.whenIssued(60);
    const stopping = Date.now();
    await stopInfraComponent('kafka');
    const stoppedMs = Date.now() - stopping;
    const starting = Date.now();
    await restartInfra();
    const startedMs = Date.now() - starting;
    const result = await running;
    await expectExactlyMetered('(b) Kafka restart', accountId, [result], before, [
      `broker stopped in ${seconds(stoppedMs)}, back in ${seconds(startedMs)}`,
    ]);
  }, 240_000);

  it('(c) PostgreSQL restarted under load', async () => {
    const { accountId, key } = await liveAccount('chaos-c');
    const before = await meteringSnapshot();
    const traffic = load(key, 200);
    const running = traffic.run();
    await traffic.whenIssued(60);
    const stopping = Date.now();
    await stopInfraComponent('postgres');
    const stoppedMs = Date.now() - stopping;
    const starting = Date.now();
    await restartInfra();
    const startedMs = Date.now() - starting;
    const result = await running;
    await expectExactlyMetered('(c) PostgreSQL restart', accountId, [result], before, [
      `server stopped in ${seconds(stoppedMs)}, back in ${seconds(startedMs)}`,
    ]);
  }, 240_000);

  it('(d) ingress restarted while Kafka is down: its spool survives and is delivered', async () => {
    const { accountId, key } = await liveAccount('chaos-d');
    const before = await meteringSnapshot();
    const kafkaDown = Date.now();
    await stopInfraComponent('kafka');
    const notes: string[] = [];
    const results: LoadResult[] = [];
    try {
      // Load, and SIGTERM the ingress while requests are in flight: those that completed are in its spool.
      const first = load(key, 120, 15);
      const firstRunning = first.run();
      await first.whenIssued(90);
      const stopping = Date.now();
      const stopped = await stopService(stack, 'ingress');
      notes.push(
        stopped.graceful
          ? `ingress exited on SIGTERM in ${seconds(Date.now() - stopping)}`
          : `ingress did NOT exit within 8 s of SIGTERM and was killed (SIGKILL)`,
      );
      results.push(await firstRunning);
      notes.push(`${await spoolSegments()} spool segment(s) on disk`);
      await startService(stack, 'ingress');
      const recovered = await spoolDepth(stack);
      notes.push(
        `new ingress recovered ${recovered} events from its spool (this account's first load completed ` +
          `${results[0]!.completed.length}; the rest were delivered before the restart and are sent again)`,
      );
      expect(recovered).toBeGreaterThan(0);
      results.push(await load(key, 100, 15).run());
    } finally {
      await restartInfra();
      notes.push(`Kafka down for ${seconds(Date.now() - kafkaDown)}`);
    }
    await expectExactlyMetered('(d) ingress restart while Kafka down', accountId, results, before, notes);
  }, 240_000);
});
