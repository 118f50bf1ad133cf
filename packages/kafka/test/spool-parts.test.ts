import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeSpoolFiles } from '../src/spool-files';
import { encodeRecord, segmentHeaderBytes } from '../src/spool-format';
import { SpoolLedger } from '../src/spool-ledger';
import { SpoolReader } from '../src/spool-reader';
import { SpoolWriter } from '../src/spool-writer';

const noLog = () => undefined;
/** Each record is its 8-byte header plus a 12-byte payload. */
const recordBytes = 20;

function record(index: number): Buffer {
  return encodeRecord(Buffer.from(`payload-${String(index).padStart(4, '0')}`));
}

describe('the spool writer and reader', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'spool-parts-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Writes five records in one group into segments that hold three each, and seals the last. */
  async function writeFive(): Promise<{ ledger: SpoolLedger; changes: number }> {
    const ledger = new SpoolLedger(dir, nodeSpoolFiles);
    let changes = 0;
    const writer = new SpoolWriter(ledger, {
      segmentBytes: segmentHeaderBytes + 3 * recordBytes,
      writeProbeMs: 1_000,
      log: noLog,
      isOpen: () => true,
      onSegmentsChanged: () => (changes += 1),
    });
    await Promise.all([0, 1, 2, 3, 4].map((index) => writer.append({ record: record(index), pins: false })));
    await writer.sealAppendFile();
    return { ledger, changes };
  }

  it('rotates to a new segment when a group does not fit, and recovery reads the records back in order', async () => {
    const { ledger, changes } = await writeFive();
    expect(ledger.segments.map((segment) => [segment.sequence, segment.events, segment.end])).toEqual([
      [1, 3, segmentHeaderBytes + 3 * recordBytes],
      [2, 2, segmentHeaderBytes + 2 * recordBytes],
    ]);
    expect(changes).toBeGreaterThan(0);

    const recovered = new SpoolLedger(dir, nodeSpoolFiles);
    const reader = new SpoolReader(recovered, noLog);
    await reader.recover();
    expect(recovered.pendingEvents).toBe(5);
    expect(recovered.pendingBytes).toBe(5 * recordBytes);
    expect(recovered.nextSequence).toBe(3);
    const read = await reader.readBatch(recovered.segments[0]!, 10);
    expect(read.records.map((found) => found.payload.toString())).toEqual([
      'payload-0000',
      'payload-0001',
      'payload-0002',
    ]);
    await reader.close();
  });

  it('resumes past the delivered position of the first segment at recovery', async () => {
    await writeFive();
    const first = new SpoolReader(new SpoolLedger(dir, nodeSpoolFiles), noLog);
    await first.saveDeliveredPosition({ sequence: 1, offset: segmentHeaderBytes + 2 * recordBytes });
    await first.close();

    const recovered = new SpoolLedger(dir, nodeSpoolFiles);
    const reader = new SpoolReader(recovered, noLog);
    await reader.recover();
    expect(reader.readOffset).toBe(segmentHeaderBytes + 2 * recordBytes);
    expect(recovered.pendingEvents).toBe(3);
    expect(recovered.segments[0]!.events).toBe(1);
    const read = await reader.readBatch(recovered.segments[0]!, 10);
    expect(read.records.map((found) => found.payload.toString())).toEqual(['payload-0002']);
    await reader.close();
  });

  it('starts the next segment from its first record when the delivered position is at the end of the first', async () => {
    await writeFive();
    const first = new SpoolReader(new SpoolLedger(dir, nodeSpoolFiles), noLog);
    await first.saveDeliveredPosition({ sequence: 1, offset: segmentHeaderBytes + 3 * recordBytes });
    await first.close();

    const recovered = new SpoolLedger(dir, nodeSpoolFiles);
    const reader = new SpoolReader(recovered, noLog);
    const { removable } = await reader.recover();
    expect(removable).toHaveLength(1);
    expect(reader.readOffset).toBe(segmentHeaderBytes);
    expect(recovered.pendingEvents).toBe(2);
    const read = await reader.readBatch(recovered.segments[0]!, 10);
    expect(read.records.map((found) => found.payload.toString())).toEqual(['payload-0003', 'payload-0004']);
    await reader.close();
  });
});
