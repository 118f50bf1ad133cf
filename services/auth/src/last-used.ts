/**
 * Records when keys were last used without a database write per request: a key's use is written at
 * most once per interval, and the writes of a few seconds go out as one statement.
 */
export class LastUsedRecorder {
  private readonly recordedAt = new Map<string, number>();
  private pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly write: (keyIds: string[]) => Promise<void>,
    private readonly onWriteFailure: (error: unknown) => void,
    private readonly intervalMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  record(keyId: string): void {
    const last = this.recordedAt.get(keyId);
    const now = this.now();
    if (last !== undefined && now - last < this.intervalMs) return;
    this.recordedAt.set(keyId, now);
    this.pending.add(keyId);
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const keyIds = [...this.pending];
    this.pending = new Set();
    try {
      await this.write(keyIds);
    } catch (error) {
      // Try again at the next flush rather than waiting out the interval.
      for (const keyId of keyIds) this.recordedAt.delete(keyId);
      this.onWriteFailure(error);
    }
    const horizon = this.now() - this.intervalMs;
    for (const [keyId, at] of this.recordedAt) if (at < horizon) this.recordedAt.delete(keyId);
  }

  start(flushEveryMs: number): void {
    this.timer = setInterval(() => void this.flush(), flushEveryMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
