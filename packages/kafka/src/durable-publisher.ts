import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { eventsv1, toBinary } from '@gw/proto';
import type { KafkaLog } from './client';
import { SpoolDrainer } from './spool-drainer';
import { nodeSpoolFiles } from './spool-files';
import type { SpoolFiles } from './spool-files';
import { encodeProvisionalRecord, encodeRecord } from './spool-format';
import { removeFile, SpoolLedger } from './spool-ledger';
import { SpoolLock, SpoolLockedError } from './spool-lock';
import type { SpoolLockOptions } from './spool-lock';
import { SpoolReader } from './spool-reader';
import type { Recovery } from './spool-reader';
import { SpoolWriter } from './spool-writer';
import type { SpoolAppend } from './spool-writer';
import type { UsageEvent, UsageEventPublisher } from './usage-producer';

/** send() refused an event: the spool holds as many bytes as it may. */
export class SpoolFullError extends Error {
  override name = 'SpoolFullError';

  constructor(
    readonly pendingBytes: number,
    readonly maxBytes: number,
  ) {
    super(`the usage spool is full: ${pendingBytes} of ${maxBytes} bytes wait for Kafka`);
  }
}

/** What the spool holds that Kafka has not acknowledged yet. */
export interface SpoolDepth {
  events: number;
  /** Record bytes (8-byte header + payload) of those events; the number the size cap applies to. */
  bytes: number;
}

export interface DurableUsagePublisherOptions {
  /** The spool directory; created if missing. One publisher at a time may use it. */
  dir: string;
  /**
   * Most bytes of events waiting for Kafka; send() rejects with SpoolFullError beyond. The files
   * take at most this plus one segment (the delivered start of the oldest segment). 256 MiB.
   */
  maxBytes?: number;
  /**
   * isFull() turns true this many bytes before the cap, so that the requests admitted just before
   * still find room for their events. Default: a tenth of maxBytes, at most 1 MiB.
   */
  headroomBytes?: number;
  /** A segment takes no more records once it has this many bytes. 4 MiB. */
  segmentBytes?: number;
  /** Most events handed to Kafka at a time (the producer's batch size). 500. */
  drainBatchEvents?: number;
  /** First pause after a failed delivery, doubled after each further failure. 250 ms. */
  retryInitialMs?: number;
  /** Longest pause between delivery attempts. 30 s. */
  retryMaxMs?: number;
  /**
   * How long disconnect() waits for a delivery in flight and the sink's close, together; not at all
   * while deliveries fail (Kafka away). 5 s.
   */
  stopTimeoutMs?: number;
  /**
   * How long disconnect() keeps delivering the whole spool to Kafka before it stops, while Kafka takes
   * the events; it stops at once when a delivery fails or a batch takes longer than stopTimeoutMs (what is
   * left waits on disk for the next start, or for a sweeper). 0: only the delivery in flight is waited for.
   */
  drainOnStopMs?: number;
  /** After a failed write, how often the spool tries again to write (a new segment). 1 s. */
  writeProbeMs?: number;
  /** The directory lock's heartbeat and staleness (SpoolLock). */
  lock?: Pick<SpoolLockOptions, 'heartbeatMs' | 'staleMs'>;
  /** The directory lock was taken by another process: this one must stop (its events are refused meanwhile). */
  onLockLost?: (reason: string) => void;
  log?: KafkaLog;
  /** The file system under the spool: node's; a test's crash layer. */
  files?: SpoolFiles;
}

/**
 * A request's provisional record (begin()): the event that bills it at the most it may cost, kept on
 * disk until the request's final event is durable, and billed in its place after a crash if that
 * never happened.
 */
export class ProvisionalRecord {
  constructor(
    /** Resolves once the record is synced; rejects when it was not written (spool full, disk failing). */
    readonly durable: Promise<void>,
    readonly entry: SpoolAppend,
  ) {}
}

type State = 'new' | 'opening' | 'open' | 'closing' | 'closed';

/** Spool directories locked by publishers of this process (the lock file names the process, not the publisher). */
const lockedHere = new Set<string>();

/**
 * A usage-event publisher that loses no event while Kafka is away: every event is appended to a
 * local spool and synced to disk (in small groups) before send() resolves, and a background drainer
 * delivers the spool in order through the given sink (the Kafka producer), retrying with capped
 * backoff while Kafka is unavailable. A segment file is deleted once all its events have been
 * acknowledged. Segments left by an earlier run, cleanly stopped or not, are delivered first, from
 * the delivered position the drainer keeps beside them; an event may still be delivered twice (the
 * position is not synced to disk, and Kafka may have taken a batch whose acknowledgement was lost),
 * which consumers absorb by event id.
 *
 * Beside the events, a request may have a provisional record (begin()): the event that bills it at the most it
 * may cost, never delivered, whose segment is kept until the request's final event (send() with it) is durable.
 * A start that finds a provisional record with no final event after it delivers it as that request's event.
 *
 * The spool is bounded: past maxBytes of undelivered events send() rejects with SpoolFullError, and
 * isFull() tells callers to stop taking work that would produce events. So does acceptsEvents(),
 * which also turns false while writes to the disk fail (until a probe write succeeds again) and once
 * the directory lock is lost.
 */
export class DurableUsagePublisher implements UsageEventPublisher {
  private readonly dir: string;
  private readonly maxBytes: number;
  private readonly headroomBytes: number;
  private readonly log: KafkaLog;
  private readonly ledger: SpoolLedger;
  private readonly writer: SpoolWriter;
  private readonly reader: SpoolReader;
  private readonly drainer: SpoolDrainer;

  private state: State = 'new';
  private locked = false;
  private spoolLock: SpoolLock | undefined;
  private lockLost = false;

  constructor(
    sink: UsageEventPublisher,
    private readonly options: DurableUsagePublisherOptions,
  ) {
    this.dir = resolve(options.dir);
    this.maxBytes = options.maxBytes ?? 256 * 1024 * 1024;
    this.headroomBytes = options.headroomBytes ?? Math.min(1024 * 1024, Math.floor(this.maxBytes / 10));
    this.log = options.log ?? (() => undefined);
    this.ledger = new SpoolLedger(this.dir, options.files ?? nodeSpoolFiles);
    this.writer = new SpoolWriter(this.ledger, {
      segmentBytes: options.segmentBytes ?? 4 * 1024 * 1024,
      writeProbeMs: options.writeProbeMs ?? 1_000,
      log: this.log,
      isOpen: () => this.state === 'open',
      onSegmentsChanged: () => this.drainer.wake(),
    });
    this.reader = new SpoolReader(this.ledger, this.log);
    this.drainer = new SpoolDrainer(this.ledger, this.reader, sink, {
      drainBatchEvents: options.drainBatchEvents ?? 500,
      retryInitialMs: options.retryInitialMs ?? 250,
      retryMaxMs: options.retryMaxMs ?? 30_000,
      stopTimeoutMs: options.stopTimeoutMs ?? 5_000,
      drainOnStopMs: options.drainOnStopMs ?? 0,
      log: this.log,
    });
  }

  /**
   * Locks the spool directory, finds what earlier runs left, and starts delivering. Does not wait
   * for Kafka: events are accepted while it is unreachable.
   */
  async connect(): Promise<void> {
    if (this.state !== 'new') throw new Error(`the durable usage publisher cannot connect when ${this.state}`);
    this.state = 'opening';
    try {
      await this.ledger.files.mkdir(this.dir);
      await this.lock();
      await this.settleOrphans(await this.reader.recover());
    } catch (error) {
      this.state = 'closed';
      await this.unlock();
      throw error;
    }
    this.state = 'open';
    this.drainer.start();
  }

  /**
   * Resolves once the event is synced to the spool (not once Kafka has it). With the request's
   * provisional record, that record stops pinning its segment once this one is durable.
   */
  send(event: UsageEvent, provisional?: ProvisionalRecord): Promise<void> {
    const appended = this.append(() => encodeRecord(toBinary(eventsv1.UsageEventSchema, event)), false);
    if (!provisional) return appended.durable;
    return appended.durable.then(() => {
      const segment = provisional.entry.segment;
      provisional.entry.segment = undefined;
      if (segment) this.drainer.releasePin(segment);
    });
  }

  /**
   * Appends the request's provisional record: the event that bills it should its final one (send())
   * never become durable. Never delivered to Kafka.
   */
  begin(event: UsageEvent): ProvisionalRecord {
    const appended = this.append(() => encodeProvisionalRecord(toBinary(eventsv1.UsageEventSchema, event)), true);
    return new ProvisionalRecord(appended.durable, appended.entry);
  }

  private append(encode: () => Buffer, pins: boolean): { durable: Promise<void>; entry: SpoolAppend } {
    const entry: SpoolAppend = { record: Buffer.alloc(0), pins };
    if (this.state !== 'open') {
      return { durable: Promise.reject(new Error(`the durable usage publisher is not open (${this.state})`)), entry };
    }
    try {
      entry.record = encode();
    } catch (error) {
      return { durable: Promise.reject(error), entry };
    }
    if (this.ledger.pendingBytes + entry.record.length > this.maxBytes) {
      return { durable: Promise.reject(new SpoolFullError(this.ledger.pendingBytes, this.maxBytes)), entry };
    }
    // A provisional record takes room, but is no event waiting for Kafka.
    if (!pins) this.ledger.pendingEvents += 1;
    this.ledger.pendingBytes += entry.record.length;
    return { durable: this.writer.append(entry), entry };
  }

  /**
   * The requests an earlier run left unsettled get their provisional event as their final one, synced
   * before the files that held it (or anything) are deleted.
   */
  private async settleOrphans({ orphans, removable }: Recovery): Promise<void> {
    const records = orphans.map((event) => encodeRecord(event));
    this.ledger.pendingEvents += records.length;
    this.ledger.pendingBytes += records.reduce((sum, record) => sum + record.length, 0);
    await Promise.all(records.map((record) => this.writer.append({ record, pins: false })));
    if (orphans.length > 0) {
      this.log('warn', 'usage spool: requests an earlier run left unsettled are billed from their provisional record', {
        requests: orphans.length,
      });
    }
    for (const path of removable) await removeFile(this.ledger.files, path);
  }

  /** True when the spool is too close to its cap to take the events of new work. */
  isFull(): boolean {
    return this.ledger.pendingBytes + this.headroomBytes >= this.maxBytes;
  }

  /** False while new work must not start: the spool is full, its disk refuses writes, or its lock is lost. */
  acceptsEvents(): boolean {
    return !this.isFull() && !this.writer.writesFail && !this.lockLost;
  }

  depth(): SpoolDepth {
    return { events: this.ledger.pendingEvents, bytes: this.ledger.pendingBytes };
  }

  /**
   * Syncs what was sent, delivers the rest of the spool while Kafka takes it (for at most drainOnStopMs),
   * lets a delivery in flight finish (for at most stopTimeoutMs), closes the sink and the files. What
   * Kafka has not acknowledged stays in the spool for the next run.
   */
  async disconnect(): Promise<void> {
    if (this.state === 'new') {
      this.state = 'closed';
      return;
    }
    if (this.state !== 'open') return;
    this.state = 'closing';
    this.writer.stopProbing();

    await this.writer.flushAll();
    await this.drainer.deliverBeforeStop(() => this.writer.sealAppendFile());
    const drainerStopped = await this.drainer.stop();

    await this.writer.sealAppendFile();
    await this.reader.close();
    // Segments pinned by requests still unsettled stay for the next start, which bills them.
    if (drainerStopped && this.ledger.pendingEvents === 0 && !this.ledger.pinned) {
      await this.drainer.removeDrainedSpool();
    }
    this.log('info', 'usage spool closed', {
      pending_events: this.ledger.pendingEvents,
      pending_bytes: this.ledger.pendingBytes,
      segments: this.ledger.segments.length,
    });
    await this.unlock();
    this.state = 'closed';
  }

  private async lock(): Promise<void> {
    if (lockedHere.has(this.dir)) {
      throw new SpoolLockedError(this.dir, { pid: process.pid, host: hostname() }, 'another publisher of this process');
    }
    lockedHere.add(this.dir);
    try {
      this.spoolLock = await SpoolLock.acquire(this.dir, {
        ...this.options.lock,
        log: this.log,
        onLost: (reason) => {
          this.lockLost = true;
          this.options.onLockLost?.(reason);
        },
      });
    } catch (error) {
      lockedHere.delete(this.dir);
      throw error;
    }
    this.locked = true;
  }

  private async unlock(): Promise<void> {
    if (!this.locked) return;
    this.locked = false;
    lockedHere.delete(this.dir);
    await this.spoolLock?.release();
  }
}
