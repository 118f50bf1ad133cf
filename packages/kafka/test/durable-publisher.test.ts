import { readFileSync } from 'node:fs';
import { appendFile, mkdtemp, readdir, readlink, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create, eventsv1, toBinary } from '@gw/proto';
import { pace, waitUntil } from '@gw/testing';
import { DurableUsagePublisher, SpoolFullError, SpoolLockedError } from '../src';
import type { DurableUsagePublisherOptions, KafkaLogLevel, UsageEvent, UsageEventPublisher } from '../src';
import { encodeDeliveredPosition, encodeRecord, segmentFileName } from '../src/spool-format';

/**
 * Stands in for the Kafka producer. `up`: every send is acknowledged; `down`: every send and
 * connect rejects; `hold`: sends wait until the test settles them.
 */
class FakeSink implements UsageEventPublisher {
  mode: 'up' | 'down' | 'hold' = 'up';
  readonly delivered: string[] = [];
  readonly held: { event: UsageEvent; settle: (error?: Error) => void }[] = [];
  attempts = 0;
  connectAttempts = 0;
  disconnected = false;

  async connect(): Promise<void> {
    this.connectAttempts += 1;
    if (this.mode === 'down') throw new Error('broker unreachable');
  }

  send(event: UsageEvent): Promise<void> {
    this.attempts += 1;
    if (this.mode === 'down') return Promise.reject(new Error('broker unreachable'));
    if (this.mode === 'up') {
      this.delivered.push(event.eventId);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      this.held.push({
        event,
        settle: (error) => {
          if (error) return reject(error);
          this.delivered.push(event.eventId);
          resolve();
        },
      });
    });
  }

  async disconnect(): Promise<void> {
    this.disconnected = true;
  }
}

const usageEvent = (eventId: string) =>
  create(eventsv1.UsageEventSchema, { eventId, accountId: 'acct_1', model: 'claude-sonnet', inputTokens: 12n });

const recordBytes = (event: UsageEvent) => encodeRecord(toBinary(eventsv1.UsageEventSchema, event)).length;

const ids = (prefix: string, count: number) => Array.from({ length: count }, (_, index) => `${prefix}_${index + 1}`);

/** Waits (through waitUntil) until an assertion passes; a timeout fails with the assertion's last message. */
async function eventually(check: () => void | Promise<void>, timeoutMs = 3_000): Promise<void> {
  await waitUntil(
    async () => {
      await check();
      return true;
    },
    { what: 'the assertion to pass', timeoutMs, intervalMs: 10 },
  );
}

/** The boot id and pid namespace of this process, as a lock file names them. */
async function thisNamespace(): Promise<{ host: string; bootId: string; pidNamespace: string }> {
  return {
    host: 'test-host',
    bootId: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
    pidNamespace: await readlink('/proc/self/ns/pid'),
  };
}

const segmentFiles = async (dir: string) => (await readdir(dir)).filter((name) => name.endsWith('.spool')).sort();

describe('DurableUsagePublisher', () => {
  let dir: string;
  const open: DurableUsagePublisher[] = [];
  const logs: { level: KafkaLogLevel; message: string; fields: Record<string, unknown> }[] = [];

  async function publisher(sink: UsageEventPublisher, options: Partial<DurableUsagePublisherOptions> = {}) {
    const created = new DurableUsagePublisher(sink, {
      dir,
      retryInitialMs: 5,
      retryMaxMs: 20,
      stopTimeoutMs: 200,
      log: (level, message, fields) => logs.push({ level, message, fields }),
      ...options,
    });
    await created.connect();
    open.push(created);
    return created;
  }

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'durable-publisher-'));
    logs.length = 0;
  });

  afterEach(async () => {
    for (const created of open.splice(0)) await created.disconnect();
    await rm(dir, { recursive: true, force: true });
  });

  it('delivers what it was sent, in order, and leaves an empty spool behind', async () => {
    const sink = new FakeSink();
    const spool = await publisher(sink);
    const sent = ids('evt', 50);
    await Promise.all(sent.map((id) => spool.send(usageEvent(id))));
    await eventually(() => expect(sink.delivered).toEqual(sent));
    await eventually(() => expect(spool.depth()).toEqual({ events: 0, bytes: 0 }));
    await spool.disconnect();
    expect(sink.disconnected).toBe(true);
    expect(await readdir(dir)).toEqual([]);
  });

  it('resolves send() once the event is on disk, before Kafka has it', async () => {
    const sink = new FakeSink();
    sink.mode = 'hold';
    const spool = await publisher(sink);
    await spool.send(usageEvent('evt_1'));
    expect(sink.delivered).toEqual([]);
    expect(await segmentFiles(dir)).toEqual([segmentFileName(1)]);
    // Another instance cannot open the directory while this one holds it…
    await expect(publisher(new FakeSink())).rejects.toBeInstanceOf(SpoolLockedError);
    // …and after this one stops, the held event is still there.
    await spool.disconnect();
    const next = new FakeSink();
    await publisher(next);
    await eventually(() => expect(next.delivered).toEqual(['evt_1']));
  });

  it('keeps accepting events while Kafka is down and delivers them when it returns', async () => {
    const sink = new FakeSink();
    sink.mode = 'down';
    const spool = await publisher(sink);
    const sent = ids('evt', 20);
    await Promise.all(sent.map((id) => spool.send(usageEvent(id))));
    // Retried with backoff, without holding send() back.
    await eventually(() => expect(sink.connectAttempts).toBeGreaterThan(3));
    expect(spool.depth().events).toBe(20);
    expect(logs.filter((line) => line.level === 'warn' && /Kafka unavailable/.test(line.message))).toHaveLength(1);
    sink.mode = 'up';
    await eventually(() => expect(spool.depth()).toEqual({ events: 0, bytes: 0 }));
    expect(sink.delivered).toEqual(sent);
    expect(logs.some((line) => /accepts events again/.test(line.message))).toBe(true);
  });

  it('replays the undelivered events of an earlier run first, in order', async () => {
    const down = new FakeSink();
    down.mode = 'down';
    // Small segments: the earlier run's events span several files.
    const first = await publisher(down, { segmentBytes: 200 });
    const earlier = ids('old', 12);
    for (const id of earlier) await first.send(usageEvent(id));
    await first.disconnect();
    expect((await segmentFiles(dir)).length).toBeGreaterThan(2);

    const sink = new FakeSink();
    sink.mode = 'hold';
    const second = await publisher(sink, { segmentBytes: 200, drainBatchEvents: 5 });
    expect(second.depth().events).toBe(12);
    await second.send(usageEvent('new_1'));
    await second.send(usageEvent('new_2'));
    sink.mode = 'up';
    for (const held of sink.held.splice(0)) held.settle();
    await eventually(() => expect(sink.delivered).toEqual([...earlier, 'new_1', 'new_2']));
    // Files of the earlier run were never appended to; a new one took the new events.
    await eventually(() => expect(second.depth()).toEqual({ events: 0, bytes: 0 }));
  });

  it('skips a torn last record left by a crash without failing', async () => {
    const down = new FakeSink();
    down.mode = 'down';
    const first = await publisher(down);
    for (const id of ids('evt', 3)) await first.send(usageEvent(id));
    await first.disconnect();
    // A crash in the middle of the next append: a header and part of a payload.
    const torn = encodeRecord(toBinary(eventsv1.UsageEventSchema, usageEvent('evt_torn'))).subarray(0, 13);
    await appendFile(join(dir, segmentFileName(1)), torn);

    const sink = new FakeSink();
    const second = await publisher(sink);
    await eventually(() => expect(sink.delivered).toEqual(['evt_1', 'evt_2', 'evt_3']));
    expect(logs).toContainEqual(
      expect.objectContaining({ level: 'warn', fields: expect.objectContaining({ skipped_bytes: 13, events: 3 }) }),
    );
    await eventually(() => expect(second.depth()).toEqual({ events: 0, bytes: 0 }));
    await eventually(async () => expect(await segmentFiles(dir)).not.toContain(segmentFileName(1)));
  });

  it('replays the spool of a process that stopped without disconnecting (stale lock)', async () => {
    const down = new FakeSink();
    down.mode = 'down';
    const first = await publisher(down);
    await first.send(usageEvent('evt_1'));
    await first.disconnect();
    // What a killed process leaves: its lock file, naming a process of this machine and pid
    // namespace that no longer runs (the kernel can tell at once).
    await writeFile(join(dir, 'LOCK'), JSON.stringify({ ...(await thisNamespace()), pid: 2147483646, token: 'gone' }));
    const sink = new FakeSink();
    await publisher(sink);
    await eventually(() => expect(sink.delivered).toEqual(['evt_1']));
  });

  it('deletes a segment only once every event in it is acknowledged', async () => {
    const sink = new FakeSink();
    sink.mode = 'hold';
    const size = recordBytes(usageEvent('evt_1'));
    // Two records per segment, one event per delivery.
    const spool = await publisher(sink, { segmentBytes: 8 + 2 * size, drainBatchEvents: 1 });
    for (const id of ids('evt', 5)) await spool.send(usageEvent(id));
    expect(await segmentFiles(dir)).toEqual([segmentFileName(1), segmentFileName(2), segmentFileName(3)]);

    await eventually(() => expect(sink.held).toHaveLength(1));
    sink.held.shift()!.settle();
    await eventually(() => expect(sink.held).toHaveLength(1));
    expect(await segmentFiles(dir)).toContain(segmentFileName(1));
    expect(spool.depth()).toEqual({ events: 4, bytes: 4 * size });

    // A failed delivery moves nothing: the same event is offered again.
    sink.held.shift()!.settle(new Error('not leader'));
    await eventually(() => expect(sink.held.map((held) => held.event.eventId)).toEqual(['evt_2']));
    expect(await segmentFiles(dir)).toContain(segmentFileName(1));

    sink.held.shift()!.settle();
    await eventually(async () => expect(await segmentFiles(dir)).toEqual([segmentFileName(2), segmentFileName(3)]));
    expect(spool.depth()).toEqual({ events: 3, bytes: 3 * size });
  });

  it('never delivers a provisional record, and keeps its segment past delivery until the final record is durable', async () => {
    const sink = new FakeSink();
    const size = recordBytes(usageEvent('evt_1'));
    // Two records per segment: the provisional record of req_1 and evt_1 fill the first.
    const spool = await publisher(sink, { segmentBytes: 8 + 2 * size + 1 });
    const provisional = spool.begin(usageEvent('req_1'));
    await provisional.durable;
    // It takes room, but is no event waiting for Kafka.
    expect(spool.depth()).toEqual({ events: 0, bytes: size + 1 });
    for (const id of ids('evt', 3)) await spool.send(usageEvent(id));
    await eventually(() => expect(sink.delivered).toEqual(['evt_1', 'evt_2', 'evt_3']));
    // The first segment is delivered whole, but holds the only record billing req_1 should the process die.
    expect(await segmentFiles(dir)).toContain(segmentFileName(1));

    await spool.send(usageEvent('req_1'), provisional);
    await eventually(async () => expect(await segmentFiles(dir)).not.toContain(segmentFileName(1)));
    await eventually(() => expect(sink.delivered).toEqual(['evt_1', 'evt_2', 'evt_3', 'req_1']));
  });

  it('bills a request whose final record never came from its provisional record at the next start, once', async () => {
    const sink = new FakeSink();
    const spool = await publisher(sink);
    const settledRequest = spool.begin(usageEvent('req_settled'));
    const unsettled = spool.begin(create(eventsv1.UsageEventSchema, { ...usageEvent('req_open'), outputTokens: 64n }));
    await Promise.all([settledRequest.durable, unsettled.durable]);
    await spool.send(usageEvent('req_settled'), settledRequest);
    await eventually(() => expect(sink.delivered).toEqual(['req_settled']));
    // A clean stop keeps the spool of a request still unsettled.
    await spool.disconnect();
    expect(await segmentFiles(dir)).toEqual([segmentFileName(1)]);

    const next = new FakeSink();
    const restarted = await publisher(next);
    await eventually(() => expect(next.delivered).toEqual(['req_open']));
    expect(next.held).toEqual([]);
    await eventually(() => expect(restarted.depth()).toEqual({ events: 0, bytes: 0 }));
    await restarted.disconnect();
    expect(await segmentFiles(dir)).toEqual([]);
  });

  it('refuses events past the size cap with SpoolFullError, and takes them again once drained', async () => {
    const sink = new FakeSink();
    sink.mode = 'down';
    const size = recordBytes(usageEvent('evt_1'));
    const spool = await publisher(sink, { maxBytes: 3 * size, headroomBytes: size });
    await spool.send(usageEvent('evt_1'));
    expect(spool.isFull()).toBe(false);
    await spool.send(usageEvent('evt_2'));
    // One record of headroom left: new work is refused before send() has to refuse.
    expect(spool.isFull()).toBe(true);
    await spool.send(usageEvent('evt_3'));
    const refused = spool.send(usageEvent('evt_4'));
    await expect(refused).rejects.toBeInstanceOf(SpoolFullError);
    await expect(refused).rejects.toMatchObject({ pendingBytes: 3 * size, maxBytes: 3 * size });
    expect(spool.depth()).toEqual({ events: 3, bytes: 3 * size });

    sink.mode = 'up';
    await eventually(() => expect(spool.depth()).toEqual({ events: 0, bytes: 0 }));
    expect(spool.isFull()).toBe(false);
    await spool.send(usageEvent('evt_5'));
    await eventually(() => expect(sink.delivered).toEqual(['evt_1', 'evt_2', 'evt_3', 'evt_5']));
  });

  it('counts queued, written and in-flight events in its depth', async () => {
    const sink = new FakeSink();
    sink.mode = 'hold';
    const spool = await publisher(sink);
    const events = ids('evt', 3).map(usageEvent);
    const sends = events.map((event) => spool.send(event));
    const total = events.reduce((sum, event) => sum + recordBytes(event), 0);
    // Still in the write queue.
    expect(spool.depth()).toEqual({ events: 3, bytes: total });
    await Promise.all(sends);
    await eventually(() => expect(sink.held).toHaveLength(3));
    expect(spool.depth()).toEqual({ events: 3, bytes: total });
    for (const held of sink.held.splice(0)) held.settle();
    await eventually(() => expect(spool.depth()).toEqual({ events: 0, bytes: 0 }));
  });

  it('stops within its time limit when a delivery hangs, keeping the events for the next start', async () => {
    const sink = new FakeSink();
    sink.mode = 'hold';
    const spool = await publisher(sink, { stopTimeoutMs: 50 });
    await spool.send(usageEvent('evt_1'));
    await eventually(() => expect(sink.held).toHaveLength(1));
    const started = Date.now();
    await spool.disconnect();
    expect(Date.now() - started).toBeLessThan(1_000);
    await expect(spool.send(usageEvent('evt_2'))).rejects.toThrow('not open');
    // The hung delivery finishing late must not touch the spool any more.
    sink.held.shift()!.settle();
    expect(await segmentFiles(dir)).toEqual([segmentFileName(1)]);

    const next = new FakeSink();
    await publisher(next);
    await eventually(() => expect(next.delivered).toEqual(['evt_1']));
  });

  it('delivers the whole spool before it stops when Kafka takes it, cutting a backoff short', async () => {
    const sink = new FakeSink();
    sink.mode = 'down';
    // A backoff of 10 s would outlast the test if the stop waited for it.
    const spool = await publisher(sink, { retryInitialMs: 10_000, retryMaxMs: 10_000, drainOnStopMs: 5_000 });
    const sent = ids('evt', 1_200);
    await Promise.all(sent.map((id) => spool.send(usageEvent(id))));
    // The first attempt failed: the drainer waits out its backoff.
    await eventually(() => expect(sink.connectAttempts).toBeGreaterThan(0));
    sink.mode = 'up';
    const started = Date.now();
    await spool.disconnect();
    expect(Date.now() - started).toBeLessThan(2_000);
    // In order, each once, over several batches; nothing is left for a next start.
    expect(sink.delivered).toEqual(sent);
    expect(await readdir(dir)).toEqual([]);
    expect(logs.map((log) => log.message)).toContain('usage spool: delivered whole before stopping');
  });

  it('stops at once when Kafka refuses the delivery before stopping, keeping the events on disk', async () => {
    const sink = new FakeSink();
    sink.mode = 'down';
    const spool = await publisher(sink, { drainOnStopMs: 30_000 });
    for (const id of ids('evt', 5)) await spool.send(usageEvent(id));
    const started = Date.now();
    await spool.disconnect();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await segmentFiles(dir)).toEqual([segmentFileName(1)]);
    const warning = logs.find((log) => log.message.startsWith('usage spool: stopping with events'));
    expect(warning?.fields).toMatchObject({ pending_events: 5, kafka_unavailable: true });

    const next = new FakeSink();
    await publisher(next);
    await eventually(() => expect(next.delivered).toEqual(ids('evt', 5)));
  });

  it('stops delivering before it stops once a batch hangs for stopTimeoutMs', async () => {
    const sink = new FakeSink();
    sink.mode = 'hold';
    const spool = await publisher(sink, { drainOnStopMs: 30_000, stopTimeoutMs: 200 });
    await spool.send(usageEvent('evt_1'));
    await eventually(() => expect(sink.held).toHaveLength(1));
    const started = Date.now();
    await spool.disconnect();
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(190);
    expect(took).toBeLessThan(1_500);
    expect(await segmentFiles(dir)).toEqual([segmentFileName(1)]);
    const warning = logs.find((log) => log.message.startsWith('usage spool: stopping with events'));
    expect(warning?.fields).toMatchObject({ pending_events: 1, kafka_stalled: true });
  });

  it('gives the delivery before stopping no more than drainOnStopMs while Kafka is slow', async () => {
    // Kafka takes each event, 40 ms apart: the drain progresses but would need 4 s in all.
    const slow: UsageEventPublisher = {
      connect: async () => undefined,
      send: async () => void (await pace(40)),
      disconnect: async () => undefined,
    };
    const spool = await publisher(slow, { drainOnStopMs: 300, stopTimeoutMs: 200, drainBatchEvents: 1 });
    await Promise.all(ids('evt', 100).map((id) => spool.send(usageEvent(id))));
    const started = Date.now();
    await spool.disconnect();
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(1_500);
    expect(spool.depth().events).toBeGreaterThan(50);
    expect(spool.depth().events).toBeLessThan(100);
  });

  it('sends after a restart only what Kafka had not acknowledged, not the delivered part of the open segment', async () => {
    const sink = new FakeSink();
    const first = await publisher(sink);
    const delivered = ids('done', 20);
    for (const id of delivered) await first.send(usageEvent(id));
    await eventually(() => expect(sink.delivered).toEqual(delivered));
    sink.mode = 'down';
    const waiting = ids('wait', 5);
    for (const id of waiting) await first.send(usageEvent(id));
    await first.disconnect();
    // One segment holds both: the delivered events and the ones Kafka never took.
    expect(await segmentFiles(dir)).toEqual([segmentFileName(1)]);

    const next = new FakeSink();
    const second = await publisher(next);
    expect(second.depth().events).toBe(5);
    await eventually(() => expect(next.delivered).toEqual(waiting));
    expect(next.attempts).toBe(5);
  });

  it('numbers new segments after a delivered position left without its segments, so they are never taken as delivered', async () => {
    // What a stop interrupted between removing the last segment and the position would leave.
    await writeFile(join(dir, 'DELIVERED'), encodeDeliveredPosition({ sequence: 9, offset: 100 }));
    const down = new FakeSink();
    down.mode = 'down';
    const first = await publisher(down);
    for (const id of ids('evt', 3)) await first.send(usageEvent(id));
    await first.disconnect();
    expect(await segmentFiles(dir)).toEqual([segmentFileName(10)]);

    const sink = new FakeSink();
    await publisher(sink);
    await eventually(() => expect(sink.delivered).toEqual(ids('evt', 3)));
  });

  it('refuses new work while the disk refuses writes, and takes it again once a write succeeds', async () => {
    const sink = new FakeSink();
    // Segments of one event each: every event needs a new segment file.
    const segmentBytes = 8 + recordBytes(usageEvent('evt_1'));
    const spool = await publisher(sink, { segmentBytes, writeProbeMs: 10 });
    await spool.send(usageEvent('evt_1'));
    expect(spool.acceptsEvents()).toBe(true);
    // A real fault: the directory is gone (moved away), so no segment file can be created in it.
    await rename(dir, `${dir}.away`);
    await expect(spool.send(usageEvent('evt_2'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(spool.acceptsEvents()).toBe(false);
    expect(logs).toContainEqual(
      expect.objectContaining({ level: 'error', message: expect.stringMatching(/write failed/) }),
    );

    await rename(`${dir}.away`, dir);
    await eventually(() => expect(spool.acceptsEvents()).toBe(true));
    await spool.send(usageEvent('evt_3'));
    await eventually(() => expect(sink.delivered).toEqual(['evt_1', 'evt_3']));
  });

  it('refuses a lock whose holder in another pid namespace keeps its heartbeat, naming it', async () => {
    const holder = {
      host: 'pod-a',
      bootId: 'another-boot',
      pidNamespace: 'pid:[1]',
      pid: 1,
      startTicks: '5',
      token: 't',
    };
    await writeFile(join(dir, 'LOCK'), JSON.stringify(holder));
    const touching = setInterval(() => {
      const now = new Date();
      void utimes(join(dir, 'LOCK'), now, now).catch(() => undefined);
    }, 10);
    try {
      const refused = publisher(new FakeSink(), { lock: { staleMs: 200 } });
      await expect(refused).rejects.toBeInstanceOf(SpoolLockedError);
      await expect(refused).rejects.toThrow(
        /in use by process 1 on host pod-a \(on another machine, its heartbeat is fresh\)/,
      );
    } finally {
      clearInterval(touching);
    }
  });

  it('takes over a lock from another pid namespace once its heartbeat has stopped', async () => {
    const holder = {
      host: 'pod-a',
      bootId: 'another-boot',
      pidNamespace: 'pid:[1]',
      pid: 1,
      startTicks: '5',
      token: 't',
    };
    await writeFile(join(dir, 'LOCK'), JSON.stringify(holder));
    const sink = new FakeSink();
    const spool = await publisher(sink, { lock: { staleMs: 100 } });
    await spool.send(usageEvent('evt_1'));
    await eventually(() => expect(sink.delivered).toEqual(['evt_1']));
    expect(logs).toContainEqual(expect.objectContaining({ message: expect.stringMatching(/took over the lock/) }));
  });

  it('gives up new work when another process takes its lock', async () => {
    const lost: string[] = [];
    const spool = await publisher(new FakeSink(), {
      lock: { heartbeatMs: 10 },
      onLockLost: (reason) => lost.push(reason),
    });
    expect(spool.acceptsEvents()).toBe(true);
    const other = { host: 'pod-b', bootId: 'b', pidNamespace: 'pid:[2]', pid: 1, startTicks: '7', token: 'other' };
    await writeFile(join(dir, 'LOCK'), JSON.stringify(other));
    await eventually(() => expect(lost).toHaveLength(1));
    expect(lost[0]).toMatch(/names process 1 on pod-b/);
    expect(spool.acceptsEvents()).toBe(false);
  });
});
