import { join } from 'node:path';
import { eventsv1, fromBinary } from '@gw/proto';
import type { KafkaLog } from './client';
import type { SpoolFile } from './spool-files';
import {
  decodeDeliveredPosition,
  deliveredPositionBytes,
  encodeDeliveredPosition,
  provisionalEvent,
  readRecords,
  recordsBefore,
  scanSegment,
  segmentHeaderBytes,
  segmentSequence,
} from './spool-format';
import type { DeliveredPosition, ReadRecords, SpoolRecord } from './spool-format';
import { deliveredFileName } from './spool-ledger';
import type { Segment, SpoolLedger } from './spool-ledger';

/** What recovery found beside the segments to deliver. */
export interface Recovery {
  /**
   * The provisional events of requests whose final record never became durable (the process stopped
   * while they ran): each is appended as its request's final event, billed at the most it could cost.
   */
  orphans: Buffer[];
  /** Files left with nothing to deliver: deleted once the orphans are durable, since they may hold them. */
  removable: string[];
}

/** The event id of an encoded UsageEvent; empty when it does not decode. */
function eventIdOf(event: Uint8Array): string {
  try {
    return fromBinary(eventsv1.UsageEventSchema, event).eventId;
  } catch {
    return '';
  }
}

/**
 * Follows provisional and final records in spool order: a provisional record is open until a final
 * record of the same event id follows it.
 */
class OpenRequests {
  readonly open = new Map<string, Buffer>();
  /** Where each provisional record of the segment being scanned ends (they are no events to deliver). */
  segmentProvisional: number[] = [];

  visit = (record: SpoolRecord): void => {
    const provisional = provisionalEvent(record.payload);
    if (provisional) {
      this.segmentProvisional.push(record.end);
      const id = eventIdOf(provisional);
      if (id) this.open.set(id, Buffer.from(provisional));
    } else if (this.open.size > 0) {
      this.open.delete(eventIdOf(record.payload));
    }
  };
}

/**
 * Reads the spool back: at start, the segments an earlier run left and how far it delivered; then
 * the records of the oldest segment for the drainer, from the read offset on, and the delivered
 * position it saves beside them.
 */
export class SpoolReader {
  /** Where the next record to deliver starts in the oldest segment. */
  readOffset = segmentHeaderBytes;
  private readFile: { sequence: number; file: SpoolFile } | undefined;
  private positionFile: SpoolFile | undefined;

  constructor(
    private readonly ledger: SpoolLedger,
    private readonly log: KafkaLog,
  ) {}

  /**
   * Reads the segments an earlier run left, oldest first; they are delivered before anything new. Every
   * segment is read whole, those delivered already too, for the provisional records of requests that
   * never settled durably.
   */
  async recover(): Promise<Recovery> {
    const { files, dir } = this.ledger;
    const found: { sequence: number; name: string }[] = [];
    for (const name of await files.readdir(dir)) {
      const sequence = segmentSequence(name);
      if (sequence !== undefined) found.push({ sequence, name });
    }
    found.sort((a, b) => a.sequence - b.sequence);
    const delivered = await this.readDeliveredPosition();
    // New segments must come after the position, whatever files are left: a segment numbered below
    // it would be taken for a delivered one at the next start.
    if (delivered) this.ledger.nextSequence = delivered.sequence + 1;
    const requests = new OpenRequests();
    const removable: string[] = [];
    let skippedEvents = 0;
    for (const { sequence, name } of found) {
      this.ledger.nextSequence = Math.max(this.ledger.nextSequence, sequence + 1);
      const path = join(dir, name);
      const file = await files.open(path, 'r');
      requests.segmentProvisional = [];
      const scan = await scanSegment(file, requests.visit).finally(() => file.close());
      const provisional = requests.segmentProvisional;
      if (!scan.validHeader) {
        if (scan.skippedBytes < segmentHeaderBytes) {
          // Created, but the crash came before its header was synced: it never held an event.
          removable.push(path);
        } else {
          this.log('error', 'usage spool: not a spool segment, set aside', { file: name, bytes: scan.skippedBytes });
          await files.rename(path, `${path}.unreadable`);
        }
        continue;
      }
      if (delivered && sequence < delivered.sequence) {
        // Delivered whole (kept for its provisional records, or the run stopped before deleting it).
        removable.push(path);
        continue;
      }
      if (scan.skippedBytes > 0) {
        this.log('warn', 'usage spool: unreadable bytes at the end of a segment skipped (torn write)', {
          file: name,
          skipped_bytes: scan.skippedBytes,
          events: scan.events,
        });
      }
      let events = scan.events - provisional.length;
      let bytes = scan.recordBytes;
      let readFrom = segmentHeaderBytes;
      if (
        this.ledger.segments.length === 0 &&
        delivered?.sequence === sequence &&
        delivered.offset <= scan.validBytes
      ) {
        // The first segment left is the one the drainer was in: it resumes past what Kafka took.
        const before = await files
          .open(path, 'r')
          .then((opened) => recordsBefore(opened, delivered.offset).finally(() => opened.close()));
        if (before !== undefined) {
          const deliveredEvents = before - provisional.filter((end) => end <= delivered.offset).length;
          readFrom = delivered.offset;
          events -= deliveredEvents;
          bytes -= delivered.offset - segmentHeaderBytes;
          skippedEvents = deliveredEvents;
        }
      }
      if (events === 0) {
        // Nothing to deliver: the drainer starts in the next segment, from its first record.
        removable.push(path);
        continue;
      }
      if (this.ledger.segments.length === 0) this.readOffset = readFrom;
      this.ledger.segments.push({ sequence, path, end: scan.validBytes, sealed: true, events, bytes, pins: 0 });
      this.ledger.pendingEvents += events;
      this.ledger.pendingBytes += bytes;
    }
    const orphans = [...requests.open.values()];
    if (this.ledger.segments.length > 0 || orphans.length > 0) {
      this.log('info', 'usage spool: delivering the events of an earlier run', {
        segments: this.ledger.segments.length,
        events: this.ledger.pendingEvents,
        bytes: this.ledger.pendingBytes,
        already_delivered_events: skippedEvents,
        unsettled_requests: orphans.length,
      });
    }
    return { orphans, removable };
  }

  /** Up to maxEvents records of the segment from the read offset, as far as its synced end. */
  async readBatch(head: Segment, maxEvents: number): Promise<ReadRecords> {
    const file = await this.readFileOf(head);
    return readRecords(file, this.readOffset, head.end, maxEvents);
  }

  /** The oldest segment was removed: the next one is read from its first record. */
  startNextSegment(): void {
    this.readOffset = segmentHeaderBytes;
  }

  /**
   * Records how far the drainer delivered. Not synced: after a machine crash an older position
   * only means events sent again, which consumers drop by event id.
   */
  async saveDeliveredPosition(position: DeliveredPosition): Promise<void> {
    const path = join(this.ledger.dir, deliveredFileName);
    // Overwritten in place at offset 0; created on first use.
    const { files } = this.ledger;
    const file = (this.positionFile ??= await files.open(path, 'r+').catch(() => files.open(path, 'w+')));
    const bytes = encodeDeliveredPosition(position);
    await file.write(bytes, 0, bytes.length, 0);
  }

  /** Closes the segment being read and the position file. */
  async close(): Promise<void> {
    await this.closeReadFile();
    await this.positionFile?.close().catch(() => undefined);
    this.positionFile = undefined;
  }

  /** The delivered position an earlier run left, if it is readable. */
  private async readDeliveredPosition(): Promise<DeliveredPosition | undefined> {
    const file = await this.ledger.files.open(join(this.ledger.dir, deliveredFileName), 'r').catch(() => undefined);
    if (!file) return undefined;
    try {
      const bytes = Buffer.alloc(deliveredPositionBytes);
      await file.read(bytes, 0, deliveredPositionBytes, 0);
      return decodeDeliveredPosition(bytes);
    } finally {
      await file.close();
    }
  }

  private async readFileOf(head: Segment): Promise<SpoolFile> {
    if (this.readFile?.sequence !== head.sequence) {
      await this.closeReadFile();
      this.readFile = { sequence: head.sequence, file: await this.ledger.files.open(head.path, 'r') };
    }
    return this.readFile.file;
  }

  /** Closes the segment being read (before it is removed, or at the end). */
  async closeReadFile(): Promise<void> {
    const current = this.readFile;
    this.readFile = undefined;
    await current?.file.close().catch(() => undefined);
  }
}
