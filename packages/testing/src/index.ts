export * from './certificates';
export * from './infra-env';

/**
 * The one way tests wait: poll a condition until it holds or a bound passes, then fail saying what was
 * awaited and the last value seen. Never a fixed sleep.
 */
export interface WaitOptions {
  /** What is awaited, for the failure message. */
  what: string;
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Time between two checks (default 20 ms). */
  intervalMs?: number;
}

/**
 * Resolves with the first value of `probe` that `accept` takes (by default: any truthy value).
 * A probe that throws counts as "not yet" until the bound; its last error is in the failure message.
 */
export async function waitUntil<T>(
  probe: () => T | Promise<T>,
  options: WaitOptions,
  accept: (value: T) => boolean = (value) => Boolean(value),
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  const interval = options.intervalMs ?? 20;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (accept(value)) return value;
      last = value;
    } catch (error) {
      last = error instanceof Error ? `error: ${error.message}` : error;
    }
    if (Date.now() >= deadline) {
      const seen = typeof last === 'string' ? last : JSON.stringify(last)?.slice(0, 500);
      throw new Error(
        `timed out after ${options.timeoutMs ?? 10_000} ms waiting for ${options.what}; last seen: ${seen}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}

/**
 * Spaces out what a test itself sends (a load generator's pacing, a fake upstream's latency, jitter between
 * concurrent callers): never a wait for something to happen, which is `waitUntil`'s. Resolves false when the
 * signal aborts first.
 */
export async function pace(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return false;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', stop);
      resolve(true);
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal?.addEventListener('abort', stop, { once: true });
  });
}

/**
 * Waits until the current minute (the per-minute limit's window) has at least `marginMs` left, so that a test's
 * requests fall in one window.
 */
export async function waitForRoomInMinute(marginMs: number): Promise<void> {
  await waitUntil(() => 60_000 - (Date.now() % 60_000) >= marginMs, {
    what: `a minute window with ${marginMs} ms left`,
    timeoutMs: marginMs + 1_000,
    intervalMs: 50,
  });
}

/**
 * The counterpart of `waitUntil` for what must not happen: polls `probe` for `forMs` and fails at the first value
 * `accept` refuses (e.g. nothing more is sent after a stop).
 */
export async function holdsFor<T>(
  probe: () => T | Promise<T>,
  options: { what: string; forMs: number; intervalMs?: number },
  accept: (value: T) => boolean,
): Promise<void> {
  const end = Date.now() + options.forMs;
  for (;;) {
    const value = await probe();
    if (!accept(value)) {
      throw new Error(`${options.what} stopped holding; seen: ${JSON.stringify(value)?.slice(0, 500)}`);
    }
    if (Date.now() >= end) return;
    await pace(Math.min(options.intervalMs ?? 20, Math.max(0, end - Date.now())));
  }
}
export * from './volatile-files';
