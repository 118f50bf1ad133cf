import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitUntil } from '@gw/testing';

/**
 * The end-to-end stack has fixed ports and one database: two runs at once would wreck each other, also
 * from two checkouts on one machine, so the lock is the machine's (in its temp directory), not the
 * checkout's. A run takes it before it starts the stack and gives it back after stopping it; a lock left
 * by a process that no longer exists is taken over.
 */
const lockDir = join(tmpdir(), 'gateway-e2e-stack.lock');
const ownerFile = join(lockDir, 'pid');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function tryTake(): Promise<boolean> {
  try {
    await mkdir(lockDir, { recursive: false });
  } catch {
    const owner = Number(await readFile(ownerFile, 'utf8').catch(() => ''));
    if (Number.isInteger(owner) && owner > 0 && alive(owner)) return false;
    // Held by nobody (or its owner died before writing): take it over.
    await rm(lockDir, { recursive: true, force: true });
    try {
      await mkdir(lockDir, { recursive: false });
    } catch {
      return false;
    }
  }
  await writeFile(ownerFile, String(process.pid));
  return true;
}

export async function takeStackLock(): Promise<void> {
  await waitUntil(tryTake, {
    what: 'the end-to-end stack lock (another run holds it)',
    timeoutMs: 30 * 60_000,
    intervalMs: 1_000,
  });
}

export async function giveBackStackLock(): Promise<void> {
  const owner = Number(await readFile(ownerFile, 'utf8').catch(() => ''));
  if (owner === process.pid) await rm(lockDir, { recursive: true, force: true });
}
