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
