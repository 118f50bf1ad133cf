/**
 * A value in force that can be replaced while it is read, with subscribers that receive it at once and
 * then every later one. A subscriber that falls behind skips to the newest: only the latest counts.
 */
export class CurrentValue<T> {
  private value: T;
  private closed = false;
  private readonly wakers = new Set<() => void>();

  constructor(initial: T) {
    this.value = initial;
  }

  get(): T {
    return this.value;
  }

  /** Puts a new value in force; every subscriber receives it. */
  set(value: T): void {
    this.value = value;
    this.wakeAll();
  }

  /** The value in force, then each new one, until the signal aborts or the value is closed. */
  async *subscribe(signal: AbortSignal): AsyncGenerator<T, void, undefined> {
    let sent: { value: T } | undefined;
    while (!signal.aborted && !this.closed) {
      if (sent === undefined || sent.value !== this.value) {
        sent = { value: this.value };
        yield sent.value;
      } else {
        await this.nextChange(signal);
      }
    }
  }

  /** Ends every subscription, and any later one at once: open subscriptions must not hold up a shutdown. */
  close(): void {
    this.closed = true;
    this.wakeAll();
  }

  private nextChange(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        this.wakers.delete(wake);
        signal.removeEventListener('abort', wake);
        resolve();
      };
      this.wakers.add(wake);
      signal.addEventListener('abort', wake, { once: true });
    });
  }

  private wakeAll(): void {
    for (const wake of [...this.wakers]) wake();
  }
}
