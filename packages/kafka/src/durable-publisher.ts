import { mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { eventsv1, toBinary } from '@gw/proto';
import type { KafkaLog } from './client';
import { SpoolDrainer } from './spool-drainer';
import { encodeRecord } from './spool-format';
import { SpoolLedger } from './spool-ledger';
import { SpoolLock, SpoolLockedError } from './spool-lock';
import type { SpoolLockOptions } from './spool-lock';
import { SpoolReader } from './spool-reader';
import { SpoolWriter } from './spool-writer';
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
    this.ledger = new SpoolLedger(this.dir);
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
      await mkdir(this.dir, { recursive: true });
      await this.lock();
      await this.reader.recover();
    } catch (error) {
      this.state = 'closed';
      await this.unlock();
      throw error;
    }
    this.state = 'open';
    this.drainer.start();
  }

  /** Resolves once the event is synced to the spool (not once Kafka has it). */
  send(event: UsageEvent): Promise<void> {
    if (this.state !== 'open') {
      return Promise.reject(new Error(`the durable usage publisher is not open (${this.state})`));
    }
    let record: Buffer;
    try {
      record = encodeRecord(toBinary(eventsv1.UsageEventSchema, event));
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.ledger.pendingBytes + record.length > this.maxBytes) {
      return Promise.reject(new SpoolFullError(this.ledger.pendingBytes, this.maxBytes));
    }
    this.ledger.pendingEvents += 1;
    this.ledger.pendingBytes += record.length;
    return this.writer.append(record);
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
    if (drainerStopped && this.ledger.pendingEvents === 0) await this.drainer.removeDrainedSpool();
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
