import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { open, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { processSpecs, repoRoot } from '@gw/local-stack';
import { waitUntil } from '@gw/testing';
import {
  chaosStack,
  chaosState,
  killService,
  restartInfra,
  servicePid,
  startService,
  stopInfraComponent,
  superviseService,
} from './chaos-stack';
import type { ChaosStack } from './chaos-stack';
import { Load, sumBillable } from './load';
import type { CompletedRequest, LoadResult } from './load';
import { ingressUsageEvents, meteredEvents, meteringDuplicates, spoolDepth, waitUntilSettled } from './metered';

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
  await waitUntil(
    async () =>
      (await client.query('SELECT 1 FROM usage_aggregates WHERE account_id = $1', [accountId])).rowCount !== 0,
    { what: `usage metered for ${accountId}`, timeoutMs, intervalMs: 100 },
  );
}

/** The backend of the session that waits for the lock this client holds (metering's writer). */
async function waitForBlockedWriter(client: Client, timeoutMs: number): Promise<{ pid: number; waitEvent: string }> {
  const blocked = async () =>
    (
      await client.query<{ pid: number; waitEvent: string }>(
        'SELECT pid, wait_event AS "waitEvent" FROM pg_stat_activity WHERE pg_backend_pid() = ANY (pg_blocking_pids(pid))',
      )
    ).rows[0];
  return waitUntil(blocked, { what: 'metering to reach the locked aggregate', timeoutMs, intervalMs: 50 }).then(
    (row) => row!,
  );
}

async function waitForBackendEnd(client: Client, backend: number, timeoutMs: number): Promise<boolean> {
  const ended = async () =>
    (await client.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [backend])).rowCount === 0;
  return waitUntil(ended, { what: `backend ${backend} to end`, timeoutMs, intervalMs: 100 }).catch(() => false);
}

async function spoolSegments(): Promise<number> {
  const names = await readdir(join(chaosState.root, 'spool', 'ingress')).catch(() => [] as string[]);
  return names.filter((name) => name.endsWith('.spool')).length;
}

/** No such process, or one that has exited and waits to be reaped. */
function processGone(pid: number): boolean {
  const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
  return stat === '' || stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
}

/**
 * How long ingress may take to stop with Kafka away: its short requests end at once, then its spool gives a
 * hung delivery 2 s before it stops delivering (it would drain whole were Kafka answering) and 2 s to close.
 */
const ingressGraceMs = 10_000;

/** SIGTERM to the stack's ingress; how long it took to exit, or undefined if it had to be killed after waitMs. */
async function terminateIngress(waitMs: number): Promise<{ exitedMs: number | undefined }> {
  const pid = await servicePid(stack, 'ingress');
  if (pid === undefined) throw new Error('ingress is not running');
  const started = Date.now();
  process.kill(pid, 'SIGTERM');
  const gone = await waitUntil(() => processGone(pid), {
    what: 'ingress to exit',
    timeoutMs: waitMs,
    intervalMs: 50,
  }).then(
    () => true,
    () => false,
  );
  const exitedMs = gone ? Date.now() - started : undefined;
  if (!gone) await killService(stack, 'ingress');
  await rm(join(chaosState.run, 'ingress.pid'), { force: true });
  return { exitedMs };
}

const run = promisify(execFile);

/** gateway_billing_available of the stack's ingress. */
async function billingAvailable(): Promise<number | undefined> {
  const response = await fetch(`http://127.0.0.1:${stack.ports.metrics.ingress}/metrics`, {
    signal: AbortSignal.timeout(2_000),
  });
  const line = (await response.text()).split('\n').find((text) => text.startsWith('gateway_billing_available{'));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** Writes to path until the file system has no room left. */
async function fillUp(path: string): Promise<void> {
  const file = await open(path, 'w');
  try {
    const block = Buffer.alloc(16 * 1024, 1);
    for (;;) await file.write(block);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    await file.close();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

interface SpawnedIngress {
  /** Resolves once its admin port answers /readyz; rejects if it exits first. */
  ready(): Promise<void>;
  exited(timeoutMs: number): Promise<{ code: number | null }>;
  running(): boolean;
  /** To the ingress itself (pid 1 of its namespace), seen from here. */
  kill(signal: NodeJS.Signals): void;
  output(): string;
}

/**
 * An extra ingress of the chaos stack (own ports, the given spool directory) as pid 1 of a pid
 * namespace of its own (`unshare --pid`), the way a container runs it.
 */
async function spawnIngressInPidNamespace(name: string, spoolDir: string): Promise<SpawnedIngress> {
  const spec = processSpecs(stack.options).find((candidate) => candidate.name === 'ingress')!;
  const adminPort = await freePort();
  const env = {
    PATH: process.env.PATH ?? '',
    ...spec.env,
    HTTP_PORT: String(await freePort()),
    ADMIN_PORT: String(adminPort),
    METRICS_PORT: String(await freePort()),
    USAGE_SPOOL_DIR: spoolDir,
  };
  const child = spawn('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, join(repoRoot, spec.script)], {
    cwd: repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let exit: { code: number | null } | undefined;
  const exited = once(child, 'exit').then(([code]) => (exit = { code: code as number | null }));
  const nodePid = () =>
    Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(' ')[0]);
  return {
    ready: async () => {
      await waitUntil(
        async () => {
          if (exit) throw new Error(`ingress ${name} exited with ${exit.code}: ${output.slice(-2_000)}`);
          const response = await fetch(`http://127.0.0.1:${adminPort}/readyz`, { signal: AbortSignal.timeout(1_000) });
          return response.ok;
        },
        { what: `ingress ${name} ready`, timeoutMs: 60_000, intervalMs: 100 },
      );
    },
    exited: async (timeoutMs) => {
      await waitUntil(() => exit, { what: `ingress ${name} to exit`, timeoutMs, intervalMs: 50 });
      await exited;
      return exit!;
    },
    running: () => exit === undefined,
    kill: (signal) => {
      if (exit) return;
      try {
        process.kill(nodePid(), signal);
      } catch {
        // Gone meanwhile.
      }
    },
    output: () => output,
  };
}

describe('metering under faults: every completed request counted exactly once', () => {
  // The global setup started the stack and the global teardown stops it: other files use it too.
  beforeAll(() => {
    stack = chaosStack();
  });

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

  it('(a2) the metering consumer killed with SIGKILL and replaced: the replacement resumes within seconds', async () => {
    const { accountId, key } = await liveAccount('chaos-a2');
    const countEvents = async () => (await meteredEvents(stack.infra.databaseUrl, accountId)).length;
    const results: LoadResult[] = [await load(key, 5, 5).run()];
    // The consumer holds its partitions and has stored this account's first events.
    await waitUntil(countEvents, { what: 'the first events metered', timeoutMs: 30_000, intervalMs: 100 }, (count) => {
      return count === results[0]!.completed.length;
    });
    const before = await meteringSnapshot();

    const pid = await killService(stack, 'metering');
    const killedAt = Date.now();
    // Requests go on while metering is away; the replacement starts at once, as a supervisor would.
    const traffic = load(key, 80, 10);
    const running = traffic.run();
    await startService(stack, 'metering');
    const servingMs = Date.now() - killedAt;
    // Resumed: the usage of a request made after the kill is in Postgres.
    await waitUntil(
      countEvents,
      { what: 'an event of the replacement stored', timeoutMs: 60_000, intervalMs: 50 },
      (count) => {
        return count > results[0]!.completed.length;
      },
    );
    const resumeMs = Date.now() - killedAt;
    results.push(await running);
    await expectExactlyMetered('(a2) metering SIGKILL and replacement', accountId, results, before, [
      `killed pid ${pid}; the replacement was serving ${seconds(servingMs)} and storing usage ${seconds(resumeMs)} after the kill`,
    ]);
    print(`chaos (a2): time to resume after a SIGKILLed consumer: ${seconds(resumeMs)}`);
    // The session timeout (6 s) bounds the wait for the dead member; the promise is 2 s freshness plus a few seconds.
    expect(resumeMs).toBeLessThan(12_000);
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
      const stopped = await terminateIngress(ingressGraceMs + 5_000);
      notes.push(
        stopped.exitedMs === undefined
          ? `ingress did NOT exit within ${seconds(ingressGraceMs + 5_000)} of SIGTERM and was killed (SIGKILL)`
          : `ingress exited on SIGTERM in ${seconds(stopped.exitedMs)} (bound ${seconds(ingressGraceMs)})`,
      );
      print(`chaos (d): ingress stop with Kafka down: ${notes[0]}`);
      expect(stopped.exitedMs).toBeLessThanOrEqual(ingressGraceMs);
      results.push(await firstRunning);
      notes.push(`${await spoolSegments()} spool segment(s) on disk`);
      await startService(stack, 'ingress');
      const recovered = await spoolDepth(stack);
      notes.push(
        `new ingress recovered ${recovered} events from its spool (this account's first load completed ` +
          `${results[0]!.completed.length}; the delivered part of the spool is not sent again)`,
      );
      // The events of the earlier faults, delivered from the same segment, are not among them.
      expect(recovered).toBe(results[0]!.completed.length);
      results.push(await load(key, 100, 15).run());
    } finally {
      await restartInfra();
      notes.push(`Kafka down for ${seconds(Date.now() - kafkaDown)}`);
    }
    await expectExactlyMetered('(d) ingress restart while Kafka down', accountId, results, before, notes);
    // What the new ingress sent to Kafka: the recovered events and its own, nothing delivered before.
    const sent = await ingressUsageEvents(stack);
    print(
      `chaos (d): the new ingress sent ${sent.acknowledged} events to Kafka: ${sent.handed} of its own + recovered`,
    );
    expect(sent.acknowledged).toBe(sent.handed + results[0]!.completed.length);
  }, 240_000);

  it('(f) two ingresses on one spool directory, each pid 1 of its own pid namespace: the second refuses to start', async () => {
    const dir = join(chaosState.root, 'spool', 'shared');
    const holder = await spawnIngressInPidNamespace('holder', dir);
    let taker: SpawnedIngress | undefined;
    try {
      await holder.ready();
      // Same machine, other pid namespace: the holder is pid 1 there too, as every container's process is.
      const second = await spawnIngressInPidNamespace('second', dir);
      const refusedMs = Date.now();
      const exit = await second.exited(60_000);
      print(
        `chaos (f): the second ingress exited with ${exit.code} after ${seconds(Date.now() - refusedMs)}: ` +
          `${(/the usage spool .*?directory/.exec(second.output()) ?? ['(no lock message)'])[0]}`,
      );
      expect(exit.code).not.toBe(0);
      expect(second.output()).toMatch(
        /in use by process 1 on host .* \(in another pid namespace, its heartbeat is fresh\)/,
      );
      expect(holder.running()).toBe(true);

      // The holder killed (its lock file left behind): a new ingress takes the directory over and runs
      // (at once if it can tell the holder is gone, else once the heartbeat has stopped).
      holder.kill('SIGKILL');
      await holder.exited(10_000);
      const takeoverStarted = Date.now();
      taker = await spawnIngressInPidNamespace('taker', dir);
      await taker.ready();
      print(
        `chaos (f): after the holder's SIGKILL a new ingress took the spool over in ${seconds(Date.now() - takeoverStarted)}`,
      );
      expect(taker.output()).toMatch(/took over the lock of a stopped process/);
    } finally {
      holder.kill('SIGKILL');
      taker?.kill('SIGTERM');
      await taker?.exited(20_000);
    }
  }, 240_000);

  it('(g) the spool disk full: live requests are refused with 503 until writes succeed again', async () => {
    const { accountId, key } = await liveAccount('chaos-g');
    // Test traffic of an account of its own: its events (cost 0) are not the live account's.
    const testAccount = await liveAccount('chaos-g-test');
    const testKey = await admin<{ key: string }>('POST', '/keys', {
      account_id: testAccount.accountId,
      name: 'chaos-g-test',
      environment: 'test',
      residency: 'eu',
      privacy_mode: 'off',
    });
    const before = await meteringSnapshot();
    const dir = join(chaosState.root, 'spool', 'ingress');
    await terminateIngress(ingressGraceMs + 5_000);
    // Mounted over an empty spool only: a mount would hide segments still waiting for Kafka.
    expect(await spoolSegments()).toBe(0);
    await run('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'gw-chaos-spool', dir]);
    const results: LoadResult[] = [];
    const notes: string[] = [];
    try {
      await startService(stack, 'ingress');
      results.push(await load(key, 10).run());
      expect(await billingAvailable()).toBe(1);
      // A real fault: the file system is full. Test traffic still runs and writes events; the first
      // append that needs a new page fails.
      await fillUp(join(dir, 'filler'));
      let testRequests = 0;
      await waitUntil(
        async () => {
          testRequests += 1;
          await load(testKey.key, 1).run();
          return billingAvailable();
        },
        { what: 'billing unavailable after a failed spool write', timeoutMs: 60_000, intervalMs: 0 },
        (available) => available === 0,
      );
      const refused = await load(key, 5).run();
      notes.push(
        `disk full: billing unavailable after ${testRequests} test requests; live requests ${JSON.stringify(refused.failures)}`,
      );
      print(`chaos (g): ${notes[0]}`);
      expect(refused.completed).toEqual([]);
      expect(refused.failures).toEqual({ '503 overloaded_error': 5 });

      await rm(join(dir, 'filler'));
      const freed = Date.now();
      await waitUntil(
        billingAvailable,
        { what: 'billing available again', timeoutMs: 10_000, intervalMs: 50 },
        (available) => available === 1,
      );
      notes.push(`billing available again ${seconds(Date.now() - freed)} after space was freed`);
      results.push(await load(key, 10).run());
      expect(results[1]!.completed).toHaveLength(10);
      await expectExactlyMetered('(g) spool disk full', accountId, results, before, notes);
    } finally {
      await terminateIngress(ingressGraceMs + 5_000).catch(() => undefined);
      await run('umount', [dir]);
      await startService(stack, 'ingress');
    }
  }, 240_000);
});
