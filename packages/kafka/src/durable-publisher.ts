import { mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { eventsv1, fromBinary, toBinary } from '@gw/proto';
import type { KafkaLog } from './client';
import {
  decodeDeliveredPosition,
  deliveredPositionBytes,
  encodeDeliveredPosition,
  encodeRecord,
  readRecords,
  recordsBefore,
  recordHeaderBytes,
  scanSegment,
  segmentFileName,
  segmentHeaderBytes,
  segmentMagic,
  segmentSequence,
} from './spool-format';
import type { DeliveredPosition } from './spool-format';
import { SpoolLock, SpoolLockedError } from './spool-lock';
import type { SpoolLockOptions } from './spool-lock';
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

interface Segment {
  sequence: number;
  path: string;
  /** Offset past the last record synced to disk; nothing beyond is ever read. */
  end: number;
  /** No more records are appended (an earlier run's, rotated, or after a failed write). */
  sealed: boolean;
  /** Records not acknowledged by Kafka yet, and their bytes. */
  events: number;
  bytes: number;
}

interface QueuedRecord {
  record: Buffer;
  resolve: () => void;
  reject: (error: unknown) => void;
}

type State = 'new' | 'opening' | 'open' | 'closing' | 'closed';

/** Where the drainer has delivered to (DeliveredPosition), so that a restart does not send it again. */
const deliveredFileName = 'DELIVERED';

/** Spool directories locked by publishers of this process (the lock file names the process, not the publisher). */
const lockedHere = new Set<string>();

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/** Resolves true once the promise settles, or false after ms, whichever comes first. */
async function settlesWithin(promise: Promise<unknown> | undefined, ms: number): Promise<boolean> {
  if (!promise) return true;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(settled, settled), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function settled(): boolean {
  return true;
}

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
  private readonly segmentBytes: number;
  private readonly drainBatchEvents: number;
  private readonly retryInitialMs: number;
  private readonly retryMaxMs: number;
  private readonly stopTimeoutMs: number;
  private readonly drainOnStopMs: number;
  private readonly writeProbeMs: number;
  private readonly log: KafkaLog;

  private state: State = 'new';
  private locked = false;
  private spoolLock: SpoolLock | undefined;
  private lockLost = false;
  /** Set from a failed write until a write succeeds again. */
  private writeFailure: unknown;
  private writeProbe: NodeJS.Timeout | undefined;
  private positionFile: FileHandle | undefined;
  /** Oldest first; the last one takes the appends unless it is sealed. */
  private readonly segments: Segment[] = [];
  private nextSequence = 1;
  /** Events and bytes not acknowledged yet: queued, on disk, or in flight to Kafka. */
  private pendingEvents = 0;
  private pendingBytes = 0;

  // Writer: one flush at a time, over everything queued when it starts.
  private queue: QueuedRecord[] = [];
  private flushScheduled: NodeJS.Immediate | undefined;
  private flushing: Promise<void> | undefined;
  private appendFile: FileHandle | undefined;

  // Drainer: reads the oldest segment from readOffset.
  private draining: Promise<void> | undefined;
  private readOffset = segmentHeaderBytes;
  private readFile: { sequence: number; file: FileHandle } | undefined;
  private sinkConnected = false;
  private stopping = false;
  /** Set when disconnect() stopped waiting for the drainer: it must not touch the spool again. */
  private abandoned = false;
  private wakeDrainer: (() => void) | undefined;
  private deliveryFailing = false;
  /** disconnect() delivers what is left: a backoff is cut short, and the first failure ends the wait. */
  private finishing = false;
  private failedWhileFinishing = false;
  /** Told after each step of the drainer while disconnect() waits for the spool to empty. */
  private drainerStepped: (() => void) | undefined;

  constructor(
    private readonly sink: UsageEventPublisher,
    private readonly options: DurableUsagePublisherOptions,
  ) {
    this.dir = resolve(options.dir);
    this.maxBytes = options.maxBytes ?? 256 * 1024 * 1024;
    this.headroomBytes = options.headroomBytes ?? Math.min(1024 * 1024, Math.floor(this.maxBytes / 10));
    this.segmentBytes = options.segmentBytes ?? 4 * 1024 * 1024;
    this.drainBatchEvents = options.drainBatchEvents ?? 500;
    this.retryInitialMs = options.retryInitialMs ?? 250;
    this.retryMaxMs = options.retryMaxMs ?? 30_000;
    this.stopTimeoutMs = options.stopTimeoutMs ?? 5_000;
    this.drainOnStopMs = options.drainOnStopMs ?? 0;
    this.writeProbeMs = options.writeProbeMs ?? 1_000;
    this.log = options.log ?? (() => undefined);
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
      await this.recover();
    } catch (error) {
      this.state = 'closed';
      await this.unlock();
      throw error;
    }
    this.state = 'open';
    this.draining = this.drain();
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
    if (this.pendingBytes + record.length > this.maxBytes) {
      return Promise.reject(new SpoolFullError(this.pendingBytes, this.maxBytes));
    }
    this.pendingEvents += 1;
    this.pendingBytes += record.length;
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ record, resolve, reject });
      this.scheduleFlush();
    });
  }

  /** True when the spool is too close to its cap to take the events of new work. */
  isFull(): boolean {
    return this.pendingBytes + this.headroomBytes >= this.maxBytes;
  }

  /** False while new work must not start: the spool is full, its disk refuses writes, or its lock is lost. */
  acceptsEvents(): boolean {
    return !this.isFull() && this.writeFailure === undefined && !this.lockLost;
  }

  depth(): SpoolDepth {
    return { events: this.pendingEvents, bytes: this.pendingBytes };
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
    clearTimeout(this.writeProbe);

    this.startFlush();
    while (this.flushing) await this.flushing;
    await this.deliverBeforeStop();

    // One budget for the delivery in flight and the producer's close together; none while Kafka is
    // known to be away: what it has not acknowledged is on disk for the next start, and a stop must
    // fit in the process's grace period whatever the state of Kafka.
    const deadline = Date.now() + this.stopTimeoutMs;
    const waitMs = () => (this.deliveryFailing ? 0 : Math.max(0, deadline - Date.now()));
    this.stopping = true;
    this.wakeDrainer?.();
    const drainerStopped = await settlesWithin(this.draining, waitMs());
    if (!drainerStopped) {
      this.abandoned = true;
      this.log('warn', 'usage spool: a delivery to Kafka was not waited for; it is retried on the next start', {
        timeout_ms: this.stopTimeoutMs,
        kafka_unavailable: this.deliveryFailing,
      });
    }
    if (!(await settlesWithin(this.sink.disconnect(), waitMs()))) {
      this.log('warn', 'usage spool: the Kafka producer was not waited for to close', {
        timeout_ms: this.stopTimeoutMs,
        kafka_unavailable: this.deliveryFailing,
      });
    }

    await this.sealAppendFile();
    await this.closeReadFile();
    await this.positionFile?.close().catch(() => undefined);
    this.positionFile = undefined;
    if (drainerStopped && this.pendingEvents === 0) {
      // Everything was acknowledged: leave an empty directory. The position goes first: segments
      // without it are only sent again, while a position without them must not outlive them.
      await this.removeFile(join(this.dir, deliveredFileName));
      for (const segment of this.segments.splice(0)) await this.removeFile(segment.path);
    }
    this.log('info', 'usage spool closed', {
      pending_events: this.pendingEvents,
      pending_bytes: this.pendingBytes,
      segments: this.segments.length,
    });
    await this.unlock();
    this.state = 'closed';
  }

  /**
   * Keeps the drainer going until the spool is empty, a delivery fails, a batch takes longer than
   * stopTimeoutMs (Kafka hangs), or drainOnStopMs has passed.
   */
  private async deliverBeforeStop(): Promise<void> {
    if (this.drainOnStopMs <= 0 || this.pendingEvents === 0) return;
    const started = Date.now();
    const deadline = started + this.drainOnStopMs;
    const events = this.pendingEvents;
    this.finishing = true;
    // Sealed, the last segment is deleted once delivered; and a drainer in backoff tries again at once.
    await this.sealAppendFile();
    let stalled = false;
    while (this.pendingEvents > 0 && !this.failedWhileFinishing && !stalled && Date.now() < deadline) {
      const stepped = new Promise<void>((resolve) => (this.drainerStepped = resolve));
      stalled = !(await settlesWithin(stepped, Math.min(this.stopTimeoutMs, deadline - Date.now())));
    }
    this.drainerStepped = undefined;
    const fields = {
      delivered_events: events - this.pendingEvents,
      pending_events: this.pendingEvents,
      duration_ms: Date.now() - started,
    };
    if (this.pendingEvents === 0) this.log('info', 'usage spool: delivered whole before stopping', fields);
    else {
      this.log('warn', 'usage spool: stopping with events Kafka has not taken; they wait on disk', {
        ...fields,
        kafka_unavailable: this.failedWhileFinishing,
        kafka_stalled: stalled,
      });
    }
  }

  // ---- directory ----

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

  /** The delivered position an earlier run left, if it is readable. */
  private async readDeliveredPosition(): Promise<DeliveredPosition | undefined> {
    const file = await open(join(this.dir, deliveredFileName), 'r').catch(() => undefined);
    if (!file) return undefined;
    try {
      const bytes = Buffer.alloc(deliveredPositionBytes);
      await file.read(bytes, 0, deliveredPositionBytes, 0);
      return decodeDeliveredPosition(bytes);
    } finally {
      await file.close();
    }
  }

  /**
   * Records how far the drainer delivered. Not synced: after a machine crash an older position
   * only means events sent again, which consumers drop by event id.
   */
  private async saveDeliveredPosition(position: DeliveredPosition): Promise<void> {
    const path = join(this.dir, deliveredFileName);
    // Overwritten in place at offset 0; created on first use.
    const file = (this.positionFile ??= await open(path, 'r+').catch(() => open(path, 'w+')));
    const bytes = encodeDeliveredPosition(position);
    await file.write(bytes, 0, bytes.length, 0);
  }

  /** Reads the segments an earlier run left, oldest first; they are delivered before anything new. */
  private async recover(): Promise<void> {
    const found: { sequence: number; name: string }[] = [];
    for (const name of await readdir(this.dir)) {
      const sequence = segmentSequence(name);
      if (sequence !== undefined) found.push({ sequence, name });
    }
    found.sort((a, b) => a.sequence - b.sequence);
    const delivered = await this.readDeliveredPosition();
    // New segments must come after the position, whatever files are left: a segment numbered below
    // it would be taken for a delivered one at the next start.
    if (delivered) this.nextSequence = delivered.sequence + 1;
    let skippedEvents = 0;
    for (const { sequence, name } of found) {
      this.nextSequence = Math.max(this.nextSequence, sequence + 1);
      const path = join(this.dir, name);
      if (delivered && sequence < delivered.sequence) {
        // Delivered whole; the run that delivered it stopped before deleting it.
        await this.removeFile(path);
        continue;
      }
      const file = await open(path, 'r');
      const scan = await scanSegment(file).finally(() => file.close());
      if (!scan.validHeader) {
        if (scan.skippedBytes < segmentHeaderBytes) {
          // Created, but the crash came before its header was synced: it never held an event.
          await this.removeFile(path);
        } else {
          this.log('error', 'usage spool: not a spool segment, set aside', { file: name, bytes: scan.skippedBytes });
          await rename(path, `${path}.unreadable`);
        }
        continue;
      }
      if (scan.skippedBytes > 0) {
        this.log('warn', 'usage spool: unreadable bytes at the end of a segment skipped (torn write)', {
          file: name,
          skipped_bytes: scan.skippedBytes,
          events: scan.events,
        });
      }
      let events = scan.events;
      let bytes = scan.recordBytes;
      if (this.segments.length === 0 && delivered?.sequence === sequence && delivered.offset <= scan.validBytes) {
        // The first segment left is the one the drainer was in: it resumes past what Kafka took.
        const before = await open(path, 'r').then((file) =>
          recordsBefore(file, delivered.offset).finally(() => file.close()),
        );
        if (before !== undefined) {
          this.readOffset = delivered.offset;
          events -= before;
          bytes -= delivered.offset - segmentHeaderBytes;
          skippedEvents = before;
        }
      }
      if (events === 0) {
        await this.removeFile(path);
        continue;
      }
      this.segments.push({ sequence, path, end: scan.validBytes, sealed: true, events, bytes });
      this.pendingEvents += events;
      this.pendingBytes += bytes;
    }
    if (this.segments.length > 0) {
      this.log('info', 'usage spool: delivering the events of an earlier run', {
        segments: this.segments.length,
        events: this.pendingEvents,
        bytes: this.pendingBytes,
        already_delivered_events: skippedEvents,
      });
    }
  }

  private async removeFile(path: string): Promise<void> {
    try {
      await unlink(path);
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error;
    }
  }

  private async syncDirectory(): Promise<void> {
    const directory = await open(this.dir, 'r');
    try {
      await directory.sync();
    } finally {
      await directory.close();
    }
  }

  // ---- writer ----

  private scheduleFlush(): void {
    // Group commit without a timer: an idle writer starts as soon as this turn of the event loop has
    // queued what it will; while a sync runs, new events gather and go together in the next one.
    if (this.flushing) return; // the flush in progress starts the next one when it ends
    this.flushScheduled ??= setImmediate(() => this.startFlush());
  }

  private startFlush(): void {
    if (this.flushScheduled) clearImmediate(this.flushScheduled);
    this.flushScheduled = undefined;
    if (this.flushing || this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.flushing = this.write(batch).finally(() => {
      this.flushing = undefined;
      // Whatever arrived during the sync has waited long enough already.
      this.startFlush();
    });
  }

  /** Appends the records, one write and one sync per segment touched, then settles their sends. */
  private async write(batch: QueuedRecord[]): Promise<void> {
    let index = 0;
    try {
      while (index < batch.length) {
        const segment = await this.appendSegmentFor(batch[index]!.record.length);
        let end = index;
        let size = 0;
        while (
          end < batch.length &&
          (end === index || segment.end + size + batch[end]!.record.length <= this.segmentBytes)
        ) {
          size += batch[end]!.record.length;
          end += 1;
        }
        const bytes = Buffer.concat(
          batch.slice(index, end).map((queued) => queued.record),
          size,
        );
        const file = this.appendFile!;
        await file.write(bytes, 0, size, segment.end);
        await file.datasync();
        segment.end += size;
        segment.events += end - index;
        segment.bytes += size;
        for (const queued of batch.slice(index, end)) queued.resolve();
        index = end;
        this.wakeDrainer?.();
      }
      this.writesSucceed();
    } catch (error) {
      const failed = batch.slice(index);
      this.pendingEvents -= failed.length;
      this.pendingBytes -= failed.reduce((sum, queued) => sum + queued.record.length, 0);
      this.log('error', 'usage spool: write failed, events refused; no new work until writes succeed again', {
        err: error,
        events: failed.length,
      });
      // Unavailable before the refused sends hear of it.
      this.writeFailure = error;
      for (const queued of failed) queued.reject(error);
      // The segment may now end in part of a record: it takes no more.
      await this.sealAppendFile();
      this.scheduleWriteProbe();
    }
  }

  private writesSucceed(): void {
    if (this.writeFailure === undefined) return;
    this.writeFailure = undefined;
    clearTimeout(this.writeProbe);
    this.writeProbe = undefined;
    this.log('info', 'usage spool: writes succeed again', {});
  }

  /**
   * While writes fail, no new work brings events to write: a probe creates a new segment (a write
   * and a sync, as an append does) every writeProbeMs until one succeeds.
   */
  private scheduleWriteProbe(): void {
    if (this.writeProbe || this.state !== 'open') return;
    this.writeProbe = setTimeout(() => {
      this.writeProbe = undefined;
      if (this.writeFailure === undefined || this.state !== 'open') return;
      if (this.flushing) return this.scheduleWriteProbe(); // a write in progress answers as well
      this.flushing = this.probeWrites().finally(() => {
        this.flushing = undefined;
        this.startFlush();
      });
    }, this.writeProbeMs);
  }

  private async probeWrites(): Promise<void> {
    try {
      await this.sealAppendFile();
      await this.appendSegmentFor(0);
      this.writesSucceed();
    } catch (error) {
      this.writeFailure = error;
      this.log('debug', 'usage spool: writes still fail', { err: error });
      this.scheduleWriteProbe();
    }
  }

  /** The segment that takes the next record: the current one while it has room, else a new one. */
  private async appendSegmentFor(recordBytes: number): Promise<Segment> {
    const current = this.segments.at(-1);
    if (current && !current.sealed && this.appendFile) {
      const empty = current.end === segmentHeaderBytes;
      if (empty || current.end + recordBytes <= this.segmentBytes) return current;
      await this.sealAppendFile();
    }
    const sequence = this.nextSequence;
    this.nextSequence += 1;
    const path = join(this.dir, segmentFileName(sequence));
    const file = await open(path, 'wx');
    try {
      await file.write(segmentMagic, 0, segmentMagic.length, 0);
      await file.datasync();
      // The new name must survive a crash as well as the records in it.
      await this.syncDirectory();
    } catch (error) {
      await file.close().catch(() => undefined);
      // An empty file would be taken for a torn segment at the next start; leave nothing.
      await this.removeFile(path).catch(() => undefined);
      throw error;
    }
    this.appendFile = file;
    const segment: Segment = { sequence, path, end: segmentHeaderBytes, sealed: false, events: 0, bytes: 0 };
    this.segments.push(segment);
    return segment;
  }

  private async sealAppendFile(): Promise<void> {
    const current = this.segments.at(-1);
    if (current) current.sealed = true;
    const file = this.appendFile;
    this.appendFile = undefined;
    await file?.close().catch(() => undefined);
    this.wakeDrainer?.();
  }

  // ---- drainer ----

  /** Delivers the spool in order until disconnect(); never rejects. */
  private async drain(): Promise<void> {
    let retryMs = this.retryInitialMs;
    while (!this.stopping) {
      let delivered: boolean;
      try {
        delivered = await this.deliverNext();
      } catch (error) {
        this.log('error', 'usage spool: reading the spool failed', { err: error });
        delivered = false;
      }
      if (this.abandoned) return;
      this.drainerStepped?.();
      if (delivered) {
        retryMs = this.retryInitialMs;
      } else if (!this.stopping) {
        await this.pause(retryMs);
        retryMs = Math.min(retryMs * 2, this.retryMaxMs);
      }
    }
  }

  /**
   * Delivers the next batch of the oldest segment, deletes a segment that is all delivered, or
   * waits for new records. False when the batch failed (partly) and the next attempt should wait.
   */
  private async deliverNext(): Promise<boolean> {
    const head = this.segments[0];
    if (!head || this.readOffset >= head.end) {
      // A sealed segment read to its end has had all its events acknowledged.
      if (head?.sealed) {
        await this.removeHead(head);
        return true;
      }
      await this.idle();
      return true;
    }

    const file = await this.readFileOf(head);
    const read = await readRecords(file, this.readOffset, head.end, this.drainBatchEvents);
    if (read.records.length === 0 && read.unreadable) {
      this.log('error', 'usage spool: unreadable record, rest of the segment skipped', {
        file: segmentFileName(head.sequence),
        offset: this.readOffset,
        events: head.events,
      });
      this.acknowledge(head, head.events, head.bytes);
      this.readOffset = head.end;
      return true;
    }

    // Records that do not decode (despite a valid checksum) can never be delivered: they are
    // skipped along with the delivered records around them.
    const events: UsageEvent[] = [];
    /** For each event, the number of records up to and including it. */
    const recordCounts: number[] = [];
    read.records.forEach((record, index) => {
      try {
        events.push(fromBinary(eventsv1.UsageEventSchema, record.payload));
        recordCounts.push(index + 1);
      } catch (error) {
        this.log('error', 'usage spool: undecodable event dropped', {
          err: error,
          file: segmentFileName(head.sequence),
          offset: record.end - record.payload.length - recordHeaderBytes,
        });
      }
    });

    const acknowledged = events.length === 0 ? 0 : await this.deliver(events);
    if (this.abandoned) return false;
    // All delivered: every record read, undecodable ones included. Else the records before the
    // first event that was not delivered.
    const records = acknowledged === events.length ? read.records.length : recordCounts[acknowledged]! - 1;
    if (records > 0) {
      const end = read.records[records - 1]!.end;
      this.acknowledge(head, records, end - this.readOffset);
      this.readOffset = end;
      await this.saveDeliveredPosition({ sequence: head.sequence, offset: end }).catch((error: unknown) =>
        this.log('warn', 'usage spool: the delivered position was not saved (a restart sends these again)', {
          err: error,
        }),
      );
    }
    return acknowledged === events.length;
  }

  private acknowledge(head: Segment, events: number, bytes: number): void {
    head.events -= events;
    head.bytes -= bytes;
    this.pendingEvents -= events;
    this.pendingBytes -= bytes;
  }

  /** Sends the events through the sink; the number of them, from the first, that Kafka acknowledged. */
  private async deliver(events: UsageEvent[]): Promise<number> {
    try {
      if (!this.sinkConnected) {
        await this.sink.connect();
        this.sinkConnected = true;
      }
    } catch (error) {
      this.deliveryFailed(error, events.length);
      return 0;
    }
    // Sent in one tick, so that the producer carries them in one request.
    const results = await Promise.allSettled(events.map((event) => this.sink.send(event)));
    const firstFailure = results.findIndex((result) => result.status === 'rejected');
    if (firstFailure === -1) {
      if (this.deliveryFailing) {
        this.deliveryFailing = false;
        this.log('info', 'usage spool: Kafka accepts events again', {
          pending_events: this.pendingEvents - events.length,
        });
      }
      return events.length;
    }
    this.deliveryFailed((results[firstFailure] as PromiseRejectedResult).reason, events.length - firstFailure);
    return firstFailure;
  }

  private deliveryFailed(error: unknown, events: number): void {
    const fields = { err: error, events, pending_events: this.pendingEvents, pending_bytes: this.pendingBytes };
    // One warning per outage; the retries after it are debug lines.
    this.log(this.deliveryFailing ? 'debug' : 'warn', 'usage spool: Kafka unavailable, events kept on disk', fields);
    this.deliveryFailing = true;
    if (this.finishing) this.failedWhileFinishing = true;
  }

  private async removeHead(head: Segment): Promise<void> {
    await this.closeReadFile();
    await this.removeFile(head.path);
    this.segments.shift();
    this.readOffset = segmentHeaderBytes;
    // Nothing should remain; the counters stay exact even if something did.
    this.pendingEvents -= head.events;
    this.pendingBytes -= head.bytes;
  }

  private async readFileOf(head: Segment): Promise<FileHandle> {
    if (this.readFile?.sequence !== head.sequence) {
      await this.closeReadFile();
      this.readFile = { sequence: head.sequence, file: await open(head.path, 'r') };
    }
    return this.readFile.file;
  }

  private async closeReadFile(): Promise<void> {
    const current = this.readFile;
    this.readFile = undefined;
    await current?.file.close().catch(() => undefined);
  }

  /** Waits for the writer to add records, a segment to be sealed, or disconnect(). */
  private idle(): Promise<void> {
    return new Promise((resolve) => {
      this.wakeDrainer = () => {
        this.wakeDrainer = undefined;
        resolve();
      };
    });
  }

  /** Waits ms, or less if disconnect() is called. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wakeDrainer = undefined;
        resolve();
      }, ms);
      this.wakeDrainer = () => {
        if (!this.stopping && !this.finishing) return; // new records do not cut a backoff short
        clearTimeout(timer);
        this.wakeDrainer = undefined;
        resolve();
      };
    });
  }
}
