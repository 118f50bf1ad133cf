import { crc32 } from 'node:zlib';
import type { SpoolFile } from './spool-files';

/**
 * The on-disk format of the usage spool.
 *
 * A spool is a directory of segment files named `segment-<sequence, 20 digits>.spool`, written in
 * sequence order and only ever appended to. Each segment starts with the 8-byte magic `GWSPOOL1`
 * (format name and version), followed by records:
 *
 * ```
 * offset 0  u32 LE  payload length n (at most maxRecordPayloadBytes)
 * offset 4  u32 LE  CRC-32 (zlib polynomial) of bytes 0..3 followed by the payload
 * offset 8  n bytes payload: a gateway.events.v1.UsageEvent, protobuf binary
 * ```
 *
 * A payload whose first byte is 0 is a provisional record: the byte 0, then the UsageEvent that bills the
 * request at the most it may cost, written when the request is sent upstream. It is never delivered; after
 * a crash it is billed in place of its request's final event if that never became durable (spool-reader.ts).
 * A protobuf message never starts with 0 (field number 0 is invalid), so segments of the first version of
 * this format read the same, and a reader of that version drops provisional records as undecodable.
 *
 * A record cut short by a crash (header or payload incomplete, or bytes that fail the checksum, such
 * as the zeros a file system may show after an unsynced extension) ends the readable part of its
 * segment: readers stop there and never fail on it.
 *
 * Beside the segments: `LOCK` (the holder, spool-lock.ts) and `DELIVERED`, the drainer's delivered
 * position (encodeDeliveredPosition), so that a restart does not send the delivered records again.
 */
export const segmentMagic = Buffer.from('GWSPOOL1', 'latin1');
export const segmentHeaderBytes = segmentMagic.length;
export const recordHeaderBytes = 8;
/** Usage events are well under 1 KiB; anything near this is a bug, and far below Kafka's 1 MB message limit. */
export const maxRecordPayloadBytes = 64 * 1024;
/** Bytes read at a time; always holds at least one whole record. */
export const readChunkBytes = 1024 * 1024;

const segmentPattern = /^segment-(\d{20})\.spool$/;

export function segmentFileName(sequence: number): string {
  return `segment-${String(sequence).padStart(20, '0')}.spool`;
}

/** The sequence number of a segment file name, or undefined for any other file. */
export function segmentSequence(fileName: string): number | undefined {
  const match = segmentPattern.exec(fileName);
  return match ? Number(match[1]) : undefined;
}

function checksum(record: Buffer, payloadLength: number): number {
  return crc32(record.subarray(recordHeaderBytes, recordHeaderBytes + payloadLength), crc32(record.subarray(0, 4)));
}

/** One record: header and payload. */
export function encodeRecord(payload: Uint8Array): Buffer {
  if (payload.length > maxRecordPayloadBytes) {
    throw new RangeError(`a spool record holds at most ${maxRecordPayloadBytes} bytes, got ${payload.length}`);
  }
  const record = Buffer.allocUnsafe(recordHeaderBytes + payload.length);
  record.writeUInt32LE(payload.length, 0);
  record.set(payload, recordHeaderBytes);
  record.writeUInt32LE(checksum(record, payload.length), 4);
  return record;
}

/** The first payload byte of a provisional record. */
const provisionalMarker = 0;

/** A provisional record: the event the request is billed by should its final one never become durable. */
export function encodeProvisionalRecord(event: Uint8Array): Buffer {
  const payload = Buffer.allocUnsafe(event.length + 1);
  payload[0] = provisionalMarker;
  payload.set(event, 1);
  return encodeRecord(payload);
}

/** The event of a provisional record's payload, or undefined when the payload is a final event. */
export function provisionalEvent(payload: Buffer): Buffer | undefined {
  return payload.length > 0 && payload[0] === provisionalMarker ? payload.subarray(1) : undefined;
}

export interface SpoolRecord {
  payload: Buffer;
  /** Offset in the segment just past this record. */
  end: number;
}

export interface ParsedRecords {
  records: SpoolRecord[];
  /** Offset just past the last whole, valid record parsed (the start offset when none). */
  next: number;
  /**
   * Why parsing stopped before the end of the bytes: `incomplete` when they end inside a record
   * (a torn write at the end of a file, or only the end of a read chunk), `corrupt` when a record
   * fails its checks.
   */
  stop?: 'incomplete' | 'corrupt';
}

/** The whole, valid records at the start of `bytes`, which begin at segment offset `start`. */
export function parseRecords(bytes: Buffer, start: number, maxRecords = Infinity): ParsedRecords {
  const records: SpoolRecord[] = [];
  let position = 0;
  while (records.length < maxRecords && position < bytes.length) {
    if (bytes.length - position < recordHeaderBytes) return { records, next: start + position, stop: 'incomplete' };
    const length = bytes.readUInt32LE(position);
    if (length > maxRecordPayloadBytes) return { records, next: start + position, stop: 'corrupt' };
    if (bytes.length - position < recordHeaderBytes + length) {
      return { records, next: start + position, stop: 'incomplete' };
    }
    const record = bytes.subarray(position, position + recordHeaderBytes + length);
    if (record.readUInt32LE(4) !== checksum(record, length)) {
      return { records, next: start + position, stop: 'corrupt' };
    }
    position += record.length;
    records.push({ payload: record.subarray(recordHeaderBytes), end: start + position });
  }
  return { records, next: start + position };
}

export interface ReadRecords {
  records: SpoolRecord[];
  next: number;
  /** True when the bytes at `next` (before `to`) are not a valid record: nothing more is readable. */
  unreadable: boolean;
}

/** Reads up to maxRecords whole records of a segment between offsets `from` and `to`. */
export async function readRecords(file: SpoolFile, from: number, to: number, maxRecords: number): Promise<ReadRecords> {
  const length = Math.min(to - from, readChunkBytes);
  if (length <= 0) return { records: [], next: from, unreadable: false };
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await file.read(buffer, filled, length - filled, from + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  const parsed = parseRecords(buffer.subarray(0, filled), from, maxRecords);
  // A record cut by the end of the chunk is read whole next time; one cut by `to` or by the end of
  // the file is torn. A chunk holds any whole record, so an empty parse of a full chunk is corruption.
  const unreadable =
    parsed.stop === 'corrupt' ||
    (parsed.stop === 'incomplete' && (from + filled >= to || filled < length || parsed.records.length === 0));
  return { records: parsed.records, next: parsed.next, unreadable };
}

export interface SegmentScan {
  /** False when the file does not start with the magic (too short, or not a spool segment). */
  validHeader: boolean;
  /** Offset just past the last valid record: where reading must stop. */
  validBytes: number;
  events: number;
  /** Record bytes (headers and payloads) of the valid records. */
  recordBytes: number;
  /** Bytes after validBytes that are skipped: a torn write or damage. */
  skippedBytes: number;
}

/** Walks a segment left by an earlier run to find its valid records, each shown to `visit` in order. */
export async function scanSegment(file: SpoolFile, visit?: (record: SpoolRecord) => void): Promise<SegmentScan> {
  const size = (await file.stat()).size;
  const header = Buffer.alloc(segmentHeaderBytes);
  const { bytesRead } = await file.read(header, 0, segmentHeaderBytes, 0);
  if (bytesRead < segmentHeaderBytes || !header.equals(segmentMagic)) {
    return { validHeader: false, validBytes: 0, events: 0, recordBytes: 0, skippedBytes: size };
  }
  let offset = segmentHeaderBytes;
  let events = 0;
  for (;;) {
    const read = await readRecords(file, offset, size, Infinity);
    if (visit) read.records.forEach(visit);
    events += read.records.length;
    offset = read.next;
    if (read.unreadable || offset >= size) break;
  }
  return {
    validHeader: true,
    validBytes: offset,
    events,
    recordBytes: offset - segmentHeaderBytes,
    skippedBytes: size - offset,
  };
}

/**
 * The number of whole records from the segment's start up to offset `to`, or undefined when `to`
 * is not the end of a record (then it cannot be a delivered position of this segment).
 */
export async function recordsBefore(file: SpoolFile, to: number): Promise<number | undefined> {
  let offset = segmentHeaderBytes;
  let records = 0;
  while (offset < to) {
    const read = await readRecords(file, offset, to, Infinity);
    if (read.records.length === 0) return undefined;
    records += read.records.length;
    offset = read.next;
  }
  return offset === to ? records : undefined;
}

/** Bytes of the delivered position file: segment sequence, offset, CRC-32 of the first 8 bytes (u32 LE each). */
export const deliveredPositionBytes = 12;

/** Where the drainer has delivered to: every record before `offset` of segment `sequence`, and all earlier segments. */
export interface DeliveredPosition {
  sequence: number;
  offset: number;
}

export function encodeDeliveredPosition(position: DeliveredPosition): Buffer {
  const bytes = Buffer.alloc(deliveredPositionBytes);
  bytes.writeUInt32LE(position.sequence, 0);
  bytes.writeUInt32LE(position.offset, 4);
  bytes.writeUInt32LE(crc32(bytes.subarray(0, 8)), 8);
  return bytes;
}

/** The position in the bytes, or undefined when they are not one (missing, torn or damaged: deliver again). */
export function decodeDeliveredPosition(bytes: Buffer): DeliveredPosition | undefined {
  if (bytes.length < deliveredPositionBytes) return undefined;
  if (bytes.readUInt32LE(8) !== crc32(bytes.subarray(0, 8))) return undefined;
  return { sequence: bytes.readUInt32LE(0), offset: bytes.readUInt32LE(4) };
}
