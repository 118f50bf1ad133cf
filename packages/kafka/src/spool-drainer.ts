import { join } from 'node:path';
import { eventsv1, fromBinary } from '@gw/proto';
import type { KafkaLog } from './client';
import { provisionalEvent, recordHeaderBytes, segmentFileName } from './spool-format';
import type { SpoolRecord } from './spool-format';
import { deliveredFileName, removeFile } from './spool-ledger';
import type { Segment, SpoolLedger } from './spool-ledger';
import type { SpoolReader } from './spool-reader';
import type { UsageEvent, UsageEventPublisher } from './usage-producer';

export interface SpoolDrainerOptions {
  /** Most events handed to Kafka at a time. */
  drainBatchEvents: number;
  /** First pause after a failed delivery, doubled after each further failure. */
  retryInitialMs: number;
  /** Longest pause between delivery attempts. */
  retryMaxMs: number;
  /** How long stop() waits for a delivery in flight and the sink's close, together. */
  stopTimeoutMs: number;
  /** How long deliverBeforeStop() keeps delivering while Kafka takes the events. */
  drainOnStopMs: number;
  log: KafkaLog;
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
 * Delivers the spool in order through the sink (the Kafka producer), from the reader's offset in the
 * oldest segment, retrying with capped backoff while Kafka is unavailable; counts what Kafka
 * acknowledged off the ledger, saves the delivered position, and deletes each segment once all its
 * events are acknowledged.
 */
export class SpoolDrainer {
  private draining: Promise<void> | undefined;
  private sinkConnected = false;
  private stopping = false;
  /** Set when stop() stopped waiting for the drainer: it must not touch the spool again. */
  private abandoned = false;
  private wakeDrainer: (() => void) | undefined;
  private deliveryFailing = false;
  /** deliverBeforeStop() delivers what is left: a backoff is cut short, and the first failure ends the wait. */
  private finishing = false;
  private failedWhileFinishing = false;
  /** Told after each step of the drainer while deliverBeforeStop() waits for the spool to empty. */
  private drainerStepped: (() => void) | undefined;

  constructor(
    private readonly ledger: SpoolLedger,
    private readonly reader: SpoolReader,
    private readonly sink: UsageEventPublisher,
    private readonly options: SpoolDrainerOptions,
  ) {}

  start(): void {
    this.draining = this.drain();
  }

  /** New records, a sealed segment, or a stop: an idle drainer looks again. */
  wake(): void {
    this.wakeDrainer?.();
  }

  /**
   * Keeps the drainer going until the spool is empty, a delivery fails, a batch takes longer than
   * stopTimeoutMs (Kafka hangs), or drainOnStopMs has passed.
   */
  async deliverBeforeStop(sealAppendFile: () => Promise<void>): Promise<void> {
    const { drainOnStopMs, stopTimeoutMs, log } = this.options;
    if (drainOnStopMs <= 0 || this.ledger.pendingEvents === 0) return;
    const started = Date.now();
    const deadline = started + drainOnStopMs;
    const events = this.ledger.pendingEvents;
    this.finishing = true;
    // Sealed, the last segment is deleted once delivered; and a drainer in backoff tries again at once.
    await sealAppendFile();
    let stalled = false;
    while (this.ledger.pendingEvents > 0 && !this.failedWhileFinishing && !stalled && Date.now() < deadline) {
      const stepped = new Promise<void>((resolve) => (this.drainerStepped = resolve));
      stalled = !(await settlesWithin(stepped, Math.min(stopTimeoutMs, deadline - Date.now())));
    }
    this.drainerStepped = undefined;
    const fields = {
      delivered_events: events - this.ledger.pendingEvents,
      pending_events: this.ledger.pendingEvents,
      duration_ms: Date.now() - started,
    };
    if (this.ledger.pendingEvents === 0) log('info', 'usage spool: delivered whole before stopping', fields);
    else {
      log('warn', 'usage spool: stopping with events Kafka has not taken; they wait on disk', {
        ...fields,
        kafka_unavailable: this.failedWhileFinishing,
        kafka_stalled: stalled,
      });
    }
  }

  /**
   * Stops the drainer and closes the sink. False when the drainer was not waited for (it no longer
   * touches the spool then).
   */
  async stop(): Promise<boolean> {
    const { stopTimeoutMs, log } = this.options;
    // One budget for the delivery in flight and the producer's close together; none while Kafka is
    // known to be away: what it has not acknowledged is on disk for the next start, and a stop must
    // fit in the process's grace period whatever the state of Kafka.
    const deadline = Date.now() + stopTimeoutMs;
    const waitMs = () => (this.deliveryFailing ? 0 : Math.max(0, deadline - Date.now()));
    this.stopping = true;
    this.wakeDrainer?.();
    const drainerStopped = await settlesWithin(this.draining, waitMs());
    if (!drainerStopped) {
      this.abandoned = true;
      log('warn', 'usage spool: a delivery to Kafka was not waited for; it is retried on the next start', {
        timeout_ms: stopTimeoutMs,
        kafka_unavailable: this.deliveryFailing,
      });
    }
    if (!(await settlesWithin(this.sink.disconnect(), waitMs()))) {
      log('warn', 'usage spool: the Kafka producer was not waited for to close', {
        timeout_ms: stopTimeoutMs,
        kafka_unavailable: this.deliveryFailing,
      });
    }
    return drainerStopped;
  }

  /**
   * Everything was acknowledged: leave an empty directory. The position goes first: segments
   * without it are only sent again, while a position without them must not outlive them.
   */
  async removeDrainedSpool(): Promise<void> {
    const { files } = this.ledger;
    await removeFile(files, join(this.ledger.dir, deliveredFileName));
    for (const segment of this.ledger.segments.splice(0)) await removeFile(files, segment.path);
  }

  /**
   * A request's final record is durable: its provisional record no longer pins its segment, which is
   * deleted if it was delivered whole already.
   */
  releasePin(segment: Segment): void {
    segment.pins -= 1;
    if (segment.pins > 0) return;
    const retained = this.ledger.retained.indexOf(segment);
    if (retained === -1) return;
    this.ledger.retained.splice(retained, 1);
    removeFile(this.ledger.files, segment.path).catch((error: unknown) =>
      this.options.log('warn', 'usage spool: a delivered segment was not deleted', {
        err: error,
        file: segmentFileName(segment.sequence),
      }),
    );
  }

  /** Delivers the spool in order until stop(); never rejects. */
  private async drain(): Promise<void> {
    const { retryInitialMs, retryMaxMs, log } = this.options;
    let retryMs = retryInitialMs;
    while (!this.stopping) {
      let delivered: boolean;
      try {
        delivered = await this.deliverNext();
      } catch (error) {
        log('error', 'usage spool: reading the spool failed', { err: error });
        delivered = false;
      }
      if (this.abandoned) return;
      this.drainerStepped?.();
      if (delivered) {
        retryMs = retryInitialMs;
      } else if (!this.stopping) {
        await this.pause(retryMs);
        retryMs = Math.min(retryMs * 2, retryMaxMs);
      }
    }
  }

  /**
   * Delivers the next batch of the oldest segment, deletes a segment that is all delivered, or
   * waits for new records. False when the batch failed (partly) and the next attempt should wait.
   */
  private async deliverNext(): Promise<boolean> {
    const head = this.ledger.segments[0];
    if (!head || this.reader.readOffset >= head.end) {
      // A sealed segment read to its end has had all its events acknowledged.
      if (head?.sealed) {
        await this.removeHead(head);
        return true;
      }
      await this.idle();
      return true;
    }

    const read = await this.reader.readBatch(head, this.options.drainBatchEvents);
    if (read.records.length === 0 && read.unreadable) {
      this.options.log('error', 'usage spool: unreadable record, rest of the segment skipped', {
        file: segmentFileName(head.sequence),
        offset: this.reader.readOffset,
        events: head.events,
      });
      this.acknowledge(head, head.events, head.bytes);
      this.reader.readOffset = head.end;
      return true;
    }

    const { events, recordCounts } = this.decode(head, read.records);
    const acknowledged = events.length === 0 ? 0 : await this.deliver(events);
    if (this.abandoned) return false;
    // All delivered: every record read, undecodable ones included. Else the records before the
    // first event that was not delivered.
    const records = acknowledged === events.length ? read.records.length : recordCounts[acknowledged]! - 1;
    if (records > 0) {
      const end = read.records[records - 1]!.end;
      const provisional = read.records.slice(0, records).filter((record) => provisionalEvent(record.payload)).length;
      this.acknowledge(head, records - provisional, end - this.reader.readOffset);
      this.reader.readOffset = end;
      await this.reader.saveDeliveredPosition({ sequence: head.sequence, offset: end }).catch((error: unknown) =>
        this.options.log('warn', 'usage spool: the delivered position was not saved (a restart sends these again)', {
          err: error,
        }),
      );
    }
    return acknowledged === events.length;
  }

  /**
   * Provisional records are never delivered, and records that do not decode (despite a valid checksum)
   * never can be: both are skipped along with the delivered records around them.
   */
  private decode(head: Segment, records: SpoolRecord[]): { events: UsageEvent[]; recordCounts: number[] } {
    const events: UsageEvent[] = [];
    /** For each event, the number of records up to and including it. */
    const recordCounts: number[] = [];
    records.forEach((record, index) => {
      if (provisionalEvent(record.payload)) return;
      try {
        events.push(fromBinary(eventsv1.UsageEventSchema, record.payload));
        recordCounts.push(index + 1);
      } catch (error) {
        this.options.log('error', 'usage spool: undecodable event dropped', {
          err: error,
          file: segmentFileName(head.sequence),
          offset: record.end - record.payload.length - recordHeaderBytes,
        });
      }
    });
    return { events, recordCounts };
  }

  private acknowledge(head: Segment, events: number, bytes: number): void {
    head.events -= events;
    head.bytes -= bytes;
    this.ledger.pendingEvents -= events;
    this.ledger.pendingBytes -= bytes;
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
        this.options.log('info', 'usage spool: Kafka accepts events again', {
          pending_events: this.ledger.pendingEvents - events.length,
        });
      }
      return events.length;
    }
    this.deliveryFailed((results[firstFailure] as PromiseRejectedResult).reason, events.length - firstFailure);
    return firstFailure;
  }

  private deliveryFailed(error: unknown, events: number): void {
    const fields = {
      err: error,
      events,
      pending_events: this.ledger.pendingEvents,
      pending_bytes: this.ledger.pendingBytes,
    };
    // One warning per outage; the retries after it are debug lines.
    this.options.log(
      this.deliveryFailing ? 'debug' : 'warn',
      'usage spool: Kafka unavailable, events kept on disk',
      fields,
    );
    this.deliveryFailing = true;
    if (this.finishing) this.failedWhileFinishing = true;
  }

  private async removeHead(head: Segment): Promise<void> {
    await this.reader.closeReadFile();
    // Pinned, it stays on disk until its requests' final records are durable.
    if (head.pins > 0) this.ledger.retained.push(head);
    else await removeFile(this.ledger.files, head.path);
    this.ledger.segments.shift();
    this.reader.startNextSegment();
    // Nothing should remain; the counters stay exact even if something did.
    this.ledger.pendingEvents -= head.events;
    this.ledger.pendingBytes -= head.bytes;
  }

  /** Waits for the writer to add records, a segment to be sealed, or stop(). */
  private idle(): Promise<void> {
    return new Promise((resolve) => {
      this.wakeDrainer = () => {
        this.wakeDrainer = undefined;
        resolve();
      };
    });
  }

  /** Waits ms, or less if the publisher is stopping. */
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
