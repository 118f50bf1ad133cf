import { join } from 'node:path';
import type { KafkaLog } from './client';
import type { SpoolFile } from './spool-files';
import { segmentFileName, segmentHeaderBytes, segmentMagic } from './spool-format';
import { removeFile } from './spool-ledger';
import type { Segment, SpoolLedger } from './spool-ledger';

/** One record to append, and where it went once synced. */
export interface SpoolAppend {
  record: Buffer;
  /** A provisional record: its segment is pinned (Segment.pins) until its request's final record is durable. */
  pins: boolean;
  /** Set once the record is synced: the segment it is in. */
  segment?: Segment;
}

interface QueuedRecord {
  entry: SpoolAppend;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export interface SpoolWriterOptions {
  /** A segment takes no more records once it has this many bytes. */
  segmentBytes: number;
  /** After a failed write, how often a new segment is tried. */
  writeProbeMs: number;
  log: KafkaLog;
  /** False once the publisher is closing: no probe is started then. */
  isOpen: () => boolean;
  /** Records were synced or a segment sealed: the drainer may have work. */
  onSegmentsChanged: () => void;
}

/**
 * Appends records to the spool's last segment and syncs them before their sends resolve, in groups
 * (one write and one sync per segment touched), rotating to a new segment when one is full. After a
 * failed write it refuses nothing itself but reports writesFail until a probe write succeeds.
 */
export class SpoolWriter {
  // One flush at a time, over everything queued when it starts.
  private queue: QueuedRecord[] = [];
  private flushScheduled: NodeJS.Immediate | undefined;
  private flushing: Promise<void> | undefined;
  private appendFile: SpoolFile | undefined;
  /** Set from a failed write until a write succeeds again. */
  private writeFailure: unknown;
  private writeProbe: NodeJS.Timeout | undefined;

  constructor(
    private readonly ledger: SpoolLedger,
    private readonly options: SpoolWriterOptions,
  ) {}

  /** True from a failed write until a write succeeds again. */
  get writesFail(): boolean {
    return this.writeFailure !== undefined;
  }

  /** Resolves once the record is synced to disk; the caller has counted it as pending. */
  append(entry: SpoolAppend): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ entry, resolve, reject });
      this.scheduleFlush();
    });
  }

  /** Writes what is queued now, and what arrives meanwhile, before resolving. */
  async flushAll(): Promise<void> {
    this.startFlush();
    while (this.flushing) await this.flushing;
  }

  stopProbing(): void {
    clearTimeout(this.writeProbe);
  }

  /** The last segment takes no more records; the next append starts a new one. */
  async sealAppendFile(): Promise<void> {
    const current = this.ledger.segments.at(-1);
    if (current) current.sealed = true;
    const file = this.appendFile;
    this.appendFile = undefined;
    await file?.close().catch(() => undefined);
    this.options.onSegmentsChanged();
  }

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
        const segment = await this.appendSegmentFor(batch[index]!.entry.record.length);
        let end = index;
        let size = 0;
        while (
          end < batch.length &&
          (end === index || segment.end + size + batch[end]!.entry.record.length <= this.options.segmentBytes)
        ) {
          size += batch[end]!.entry.record.length;
          end += 1;
        }
        const bytes = Buffer.concat(
          batch.slice(index, end).map((queued) => queued.entry.record),
          size,
        );
        const file = this.appendFile!;
        await file.write(bytes, 0, size, segment.end);
        await file.datasync();
        segment.end += size;
        segment.events += batch.slice(index, end).filter((queued) => !queued.entry.pins).length;
        segment.bytes += size;
        for (const queued of batch.slice(index, end)) {
          queued.entry.segment = segment;
          if (queued.entry.pins) segment.pins += 1;
          queued.resolve();
        }
        index = end;
        this.options.onSegmentsChanged();
      }
      this.writesSucceed();
    } catch (error) {
      await this.writeFailed(batch.slice(index), error);
    }
  }

  /** Refuses the records not written; the segment may end in part of one, so it is sealed. */
  private async writeFailed(failed: QueuedRecord[], error: unknown): Promise<void> {
    this.ledger.pendingEvents -= failed.filter((queued) => !queued.entry.pins).length;
    this.ledger.pendingBytes -= failed.reduce((sum, queued) => sum + queued.entry.record.length, 0);
    this.options.log('error', 'usage spool: write failed, events refused; no new work until writes succeed again', {
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

  private writesSucceed(): void {
    if (this.writeFailure === undefined) return;
    this.writeFailure = undefined;
    clearTimeout(this.writeProbe);
    this.writeProbe = undefined;
    this.options.log('info', 'usage spool: writes succeed again', {});
  }

  /**
   * While writes fail, no new work brings events to write: a probe creates a new segment (a write
   * and a sync, as an append does) every writeProbeMs until one succeeds.
   */
  private scheduleWriteProbe(): void {
    if (this.writeProbe || !this.options.isOpen()) return;
    this.writeProbe = setTimeout(() => {
      this.writeProbe = undefined;
      if (this.writeFailure === undefined || !this.options.isOpen()) return;
      if (this.flushing) return this.scheduleWriteProbe(); // a write in progress answers as well
      this.flushing = this.probeWrites().finally(() => {
        this.flushing = undefined;
        this.startFlush();
      });
    }, this.options.writeProbeMs);
  }

  private async probeWrites(): Promise<void> {
    try {
      await this.sealAppendFile();
      await this.appendSegmentFor(0);
      this.writesSucceed();
    } catch (error) {
      this.writeFailure = error;
      this.options.log('debug', 'usage spool: writes still fail', { err: error });
      this.scheduleWriteProbe();
    }
  }

  /** The segment that takes the next record: the current one while it has room, else a new one. */
  private async appendSegmentFor(recordBytes: number): Promise<Segment> {
    const current = this.ledger.segments.at(-1);
    if (current && !current.sealed && this.appendFile) {
      const empty = current.end === segmentHeaderBytes;
      if (empty || current.end + recordBytes <= this.options.segmentBytes) return current;
      await this.sealAppendFile();
    }
    const sequence = this.ledger.nextSequence;
    this.ledger.nextSequence += 1;
    const path = join(this.ledger.dir, segmentFileName(sequence));
    const { files } = this.ledger;
    const file = await files.open(path, 'wx');
    try {
      await file.write(segmentMagic, 0, segmentMagic.length, 0);
      await file.datasync();
      // The new name must survive a crash as well as the records in it.
      await files.syncDirectory(this.ledger.dir);
    } catch (error) {
      await file.close().catch(() => undefined);
      // An empty file would be taken for a torn segment at the next start; leave nothing.
      await removeFile(files, path).catch(() => undefined);
      throw error;
    }
    this.appendFile = file;
    const segment: Segment = { sequence, path, end: segmentHeaderBytes, sealed: false, events: 0, bytes: 0, pins: 0 };
    this.ledger.segments.push(segment);
    return segment;
  }
}
