import { setTimeout as delay } from 'node:timers/promises';

/** Waits ms, or less if the signal aborts first; true when the whole wait elapsed. */
export async function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (ms <= 0) return !signal.aborted;
  try {
    await delay(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}
