import type { SpoolFiles } from './spool-files';

/** One segment file of the spool. */
export interface Segment {
  sequence: number;
  path: string;
  /** Offset past the last record synced to disk; nothing beyond is ever read. */
  end: number;
  /** No more records are appended (an earlier run's, rotated, or after a failed write). */
  sealed: boolean;
  /** Events not acknowledged by Kafka yet, and the bytes of the records not passed by the drainer (provisional ones too). */
  events: number;
  bytes: number;
  /**
   * Provisional records in this segment whose request has no durable final record yet: the file must
   * outlive its delivery, since after a crash the request is billed from them.
   */
  pins: number;
}

/**
 * What the spool's writer, reader and drainer share: its segments and the count of what Kafka has not
 * acknowledged. One object, so that the size cap and the files never disagree about what is pending.
 */
export class SpoolLedger {
  /** Oldest first; the last one takes the appends unless it is sealed. */
  readonly segments: Segment[] = [];
  /** Segments delivered whole but still pinned: deleted when their last pin goes. */
  readonly retained: Segment[] = [];
  nextSequence = 1;
  /** Events and bytes not acknowledged yet: queued, on disk, or in flight to Kafka (bytes: provisional records too). */
  pendingEvents = 0;
  pendingBytes = 0;

  constructor(
    readonly dir: string,
    readonly files: SpoolFiles,
  ) {}

  /** True while some segment holds the provisional record of a request not settled durably. */
  get pinned(): boolean {
    return this.retained.length > 0 || this.segments.some((segment) => segment.pins > 0);
  }
}

/** Where the drainer has delivered to (DeliveredPosition), so that a restart does not send it again. */
export const deliveredFileName = 'DELIVERED';

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/** Deletes the file; one already gone is not an error. */
export async function removeFile(files: SpoolFiles, path: string): Promise<void> {
  try {
    await files.unlink(path);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
}
