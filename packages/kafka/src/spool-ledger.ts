import { open, unlink } from 'node:fs/promises';

/** One segment file of the spool. */
export interface Segment {
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

/**
 * What the spool's writer, reader and drainer share: its segments and the count of what Kafka has not
 * acknowledged. One object, so that the size cap and the files never disagree about what is pending.
 */
export class SpoolLedger {
  /** Oldest first; the last one takes the appends unless it is sealed. */
  readonly segments: Segment[] = [];
  nextSequence = 1;
  /** Events and bytes not acknowledged yet: queued, on disk, or in flight to Kafka. */
  pendingEvents = 0;
  pendingBytes = 0;

  constructor(readonly dir: string) {}
}

/** Where the drainer has delivered to (DeliveredPosition), so that a restart does not send it again. */
export const deliveredFileName = 'DELIVERED';

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/** Deletes the file; one already gone is not an error. */
export async function removeFile(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
}

/** Makes the directory's entries (new or removed names) survive a crash. */
export async function syncDirectory(dir: string): Promise<void> {
  const directory = await open(dir, 'r');
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}
