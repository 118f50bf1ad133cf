import { randomUUID } from 'node:crypto';
import { link, readFile, readlink, rename, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { KafkaLog } from './client';

/** Who holds a spool lock: enough to tell, from any host and any pid namespace, whether it is the same process. */
export interface LockOwner {
  host: string;
  /** The kernel's boot id: the same on every container of one machine, new at each boot. */
  bootId: string;
  /** The pid namespace (its /proc/self/ns/pid link): containers each have their own, all starting at pid 1. */
  pidNamespace: string;
  pid: number;
  /** The process's start time in clock ticks since boot (/proc/<pid>/stat), which a reused pid does not share. */
  startTicks: string;
  /** Unique to one acquisition. */
  token: string;
}

/** Another live process (or another publisher in this one) owns the spool directory. */
export class SpoolLockedError extends Error {
  override name = 'SpoolLockedError';

  constructor(
    readonly dir: string,
    readonly owner: Partial<LockOwner>,
    reason: string,
  ) {
    super(
      `the usage spool ${dir} is in use by process ${owner.pid ?? '?'} on host ${owner.host ?? '?'} ` +
        `(${reason}); two processes must never share a spool directory: give each its own volume or path`,
    );
  }
}

export interface SpoolLockOptions {
  /**
   * How often the holder touches the lock file. A holder in another pid namespace or on another host
   * cannot be asked whether it lives: it lives while its lock file's time moves. 2 s.
   */
  heartbeatMs?: number;
  /** How long a contender watches a lock it cannot check directly before it takes it as abandoned. 10 s. */
  staleMs?: number;
  log?: KafkaLog;
  /** The lock was taken away (its file replaced or removed): this process must stop using the directory. */
  onLost?: (reason: string) => void;
}

const lockFileName = 'LOCK';

async function readOr(path: string, fallback: string): Promise<string> {
  return readFile(path, 'utf8').then(
    (text) => text.trim(),
    () => fallback,
  );
}

/** The start time field of /proc/<pid>/stat, or undefined when there is no such process here. */
async function startTicksOf(pid: number | 'self'): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  // Fields after the command name (which may hold spaces), the 22nd field overall being the start time.
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

async function ownIdentity(): Promise<LockOwner> {
  return {
    host: hostname(),
    bootId: await readOr('/proc/sys/kernel/random/boot_id', ''),
    pidNamespace: await readlink('/proc/self/ns/pid').catch(() => ''),
    pid: process.pid,
    startTicks: (await startTicksOf('self')) ?? '',
    token: randomUUID(),
  };
}

function parseOwner(text: string): Partial<LockOwner> {
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === 'object' && parsed !== null) return parsed as Partial<LockOwner>;
  } catch {
    // An older spool's lock holds a bare pid: no identity to check, so only its age can tell.
  }
  const pid = Number.parseInt(text, 10);
  return Number.isInteger(pid) ? { pid } : {};
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * An exclusive lock on a spool directory that is right across hosts and pid namespaces (every
 * container's process is pid 1): a lock file created exclusively (O_EXCL), naming its holder by
 * host, boot id, pid namespace, pid and start time, and touched every heartbeatMs while held.
 *
 * A contender decides whether the holder lives: in the same pid namespace of the same boot it asks
 * the kernel (the pid runs with the same start time); anywhere else it watches the file for staleMs
 * and takes it over only if nobody touched it meanwhile (times compared with themselves, so clocks
 * of different hosts never matter). The holder checks at each heartbeat that the file still names
 * it, and reports a lost lock instead of going on writing.
 */
export class SpoolLock {
  private heartbeat: NodeJS.Timeout | undefined;
  private released = false;

  private constructor(
    private readonly path: string,
    readonly owner: LockOwner,
    private readonly options: Required<Omit<SpoolLockOptions, 'log' | 'onLost'>> & SpoolLockOptions,
  ) {}

  /** Takes the lock of dir, waiting (up to staleMs) only to see whether a holder elsewhere still lives. */
  static async acquire(dir: string, options: SpoolLockOptions = {}): Promise<SpoolLock> {
    const settings = { heartbeatMs: 2_000, staleMs: 10_000, ...options };
    const path = join(dir, lockFileName);
    const lock = new SpoolLock(path, await ownIdentity(), settings);
    for (let attempt = 0; ; attempt += 1) {
      if (await lock.create()) break;
      const text = await readOr(path, '');
      if (text === '') continue; // removed meanwhile (or not written yet): try again
      const holder = parseOwner(text);
      const alive = await lock.holderAlive(holder, text);
      if (alive !== false) throw new SpoolLockedError(dir, holder, alive);
      if (await lock.takeOver(text)) {
        settings.log?.('info', 'usage spool: took over the lock of a stopped process', {
          dir,
          owner_host: holder.host,
          owner_pid: holder.pid,
        });
        break;
      }
      if (attempt >= 3) throw new SpoolLockedError(dir, holder, 'another process took the lock at the same moment');
    }
    lock.heartbeat = setInterval(() => void lock.beat(), settings.heartbeatMs);
    lock.heartbeat.unref();
    return lock;
  }

  /** Stops the heartbeat and removes the lock file if it is still this process's. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    clearInterval(this.heartbeat);
    if (parseOwner(await readOr(this.path, '')).token === this.owner.token) {
      await unlink(this.path).catch(() => undefined);
    }
  }

  private async create(): Promise<boolean> {
    try {
      await writeFile(this.path, `${JSON.stringify(this.owner)}\n`, { flag: 'wx' });
      return true;
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
      return false;
    }
  }

  /** False when the holder is gone; else why it counts as alive. */
  private async holderAlive(holder: Partial<LockOwner>, text: string): Promise<string | false> {
    const here =
      holder.bootId !== undefined &&
      holder.bootId !== '' &&
      holder.bootId === this.owner.bootId &&
      holder.pidNamespace !== '' &&
      holder.pidNamespace === this.owner.pidNamespace;
    if (here && holder.pid !== undefined) {
      // The kernel can answer: same machine, same boot, same pid namespace.
      const ticks = holder.pid === process.pid ? undefined : await startTicksOf(holder.pid);
      return ticks !== undefined && ticks === holder.startTicks ? 'it is running' : false;
    }
    const before = await stat(this.path).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, this.options.staleMs));
    const after = await stat(this.path).catch(() => undefined);
    if (!before || !after) return 'its lock file changed while it was watched';
    if ((await readOr(this.path, '')) !== text) return 'its lock file changed while it was watched';
    if (after.mtimeMs !== before.mtimeMs) {
      const where = holder.bootId === this.owner.bootId ? 'in another pid namespace' : 'on another machine';
      return `${where}, its heartbeat is fresh`;
    }
    return false;
  }

  /**
   * Replaces an abandoned lock file. Moving it aside is atomic, so of two contenders only one moves
   * it; the one that moved a file it did not judge (a fresh lock) puts it back.
   */
  private async takeOver(judged: string): Promise<boolean> {
    const aside = `${this.path}.${this.owner.token}`;
    try {
      await rename(this.path, aside);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return false;
      throw error;
    }
    const moved = await readOr(aside, '');
    if (moved !== judged) {
      await link(aside, this.path).catch(() => undefined);
      await unlink(aside).catch(() => undefined);
      return false;
    }
    await unlink(aside).catch(() => undefined);
    return this.create();
  }

  /** Touches the file (the sign of life for contenders elsewhere) after checking it is still ours. */
  private async beat(): Promise<void> {
    if (this.released) return;
    const holder = parseOwner(await readOr(this.path, ''));
    if (holder.token !== this.owner.token) {
      this.released = true;
      clearInterval(this.heartbeat);
      const reason = `the lock file ${this.path} now names process ${holder.pid ?? 'none'} on ${holder.host ?? 'no host'}`;
      this.options.log?.('error', 'usage spool: lock lost', { reason });
      this.options.onLost?.(reason);
      return;
    }
    const now = new Date();
    await utimes(this.path, now, now).catch((error: unknown) =>
      this.options.log?.('warn', 'usage spool: the lock heartbeat failed', { err: error }),
    );
  }
}
