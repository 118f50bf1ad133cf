import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  encodeRecord,
  maxRecordPayloadBytes,
  parseRecords,
  readChunkBytes,
  scanSegment,
  segmentFileName,
  segmentMagic,
  segmentSequence,
} from '../src/spool-format';

const payload = (text: string) => Buffer.from(text, 'utf8');

describe('spool records', () => {
  it('round-trips payloads through length-prefixed, checksummed records', () => {
    const records = [payload('first'), payload(''), payload('third event')].map(encodeRecord);
    const bytes = Buffer.concat(records);
    const parsed = parseRecords(bytes, 8);
    expect(parsed.stop).toBeUndefined();
    expect(parsed.records.map((record) => record.payload.toString('utf8'))).toEqual(['first', '', 'third event']);
    expect(parsed.records.map((record) => record.end)).toEqual([8 + 13, 8 + 21, 8 + 40]);
    expect(parsed.next).toBe(8 + bytes.length);
  });

  it('stops at a record cut short, keeping the whole ones before it', () => {
    const bytes = Buffer.concat([encodeRecord(payload('kept')), encodeRecord(payload('torn record'))]);
    for (const cut of [bytes.length - 1, 12 + 8 + 3, 12 + 5]) {
      const parsed = parseRecords(bytes.subarray(0, cut), 0);
      expect(parsed.records.map((record) => record.payload.toString())).toEqual(['kept']);
      expect(parsed).toMatchObject({ next: 12, stop: 'incomplete' });
    }
  });

  it('stops at a record whose checksum, or length, does not hold', () => {
    const good = encodeRecord(payload('good'));
    const flipped = encodeRecord(payload('flipped'));
    flipped[flipped.length - 1]! ^= 0x01;
    expect(parseRecords(Buffer.concat([good, flipped, good]), 0)).toMatchObject({ next: good.length, stop: 'corrupt' });
    // The zeros a file system may show past the last synced write are not a record.
    expect(parseRecords(Buffer.concat([good, Buffer.alloc(64)]), 0)).toMatchObject({
      next: good.length,
      stop: 'corrupt',
    });
    const huge = Buffer.alloc(16);
    huge.writeUInt32LE(maxRecordPayloadBytes + 1, 0);
    expect(parseRecords(huge, 0)).toMatchObject({ records: [], next: 0, stop: 'corrupt' });
  });

  it('refuses a payload above the record limit', () => {
    expect(() => encodeRecord(Buffer.alloc(maxRecordPayloadBytes + 1))).toThrow(RangeError);
    expect(readChunkBytes).toBeGreaterThan(maxRecordPayloadBytes + 8);
  });

  it('names segments so that their names sort in sequence order', () => {
    expect(segmentFileName(42)).toBe('segment-00000000000000000042.spool');
    expect(segmentSequence(segmentFileName(42))).toBe(42);
    expect(segmentSequence('LOCK')).toBeUndefined();
    expect(segmentSequence('segment-00000000000000000042.spool.unreadable')).toBeUndefined();
    expect([segmentFileName(10), segmentFileName(9)].sort()).toEqual([segmentFileName(9), segmentFileName(10)]);
  });
});

describe('scanSegment', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'spool-format-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  async function scan(bytes: Buffer) {
    const path = join(dir, segmentFileName(1));
    await writeFile(path, bytes);
    const file = await open(path, 'r');
    try {
      return await scanSegment(file);
    } finally {
      await file.close();
    }
  }

  it('counts the valid records and skips a torn last record', async () => {
    const whole = [encodeRecord(payload('a')), encodeRecord(payload('bb'))];
    const torn = encodeRecord(payload('a record the crash cut')).subarray(0, 15);
    const recordBytes = whole[0]!.length + whole[1]!.length;
    await expect(scan(Buffer.concat([segmentMagic, ...whole, torn]))).resolves.toEqual({
      validHeader: true,
      validBytes: segmentMagic.length + recordBytes,
      events: 2,
      recordBytes,
      skippedBytes: 15,
    });
  });

  it('reads records across read chunks', async () => {
    const records = Array.from({ length: 40 }, (_, index) => encodeRecord(Buffer.alloc(60_000, index)));
    const result = await scan(Buffer.concat([segmentMagic, ...records]));
    expect(result).toMatchObject({ validHeader: true, events: 40, skippedBytes: 0 });
  });

  it('reports a file without the magic', async () => {
    await expect(scan(Buffer.from('GWSP'))).resolves.toMatchObject({ validHeader: false, skippedBytes: 4 });
    await expect(scan(Buffer.from('not a spool segment'))).resolves.toMatchObject({ validHeader: false, events: 0 });
  });
});
