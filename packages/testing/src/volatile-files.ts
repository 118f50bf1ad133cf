import { mkdir } from 'node:fs/promises';
import { basename } from 'node:path';

/** A file's bytes as the process sees them (the page cache), and as the disk holds them. */
interface Inode {
  current: Buffer;
  durable: Buffer;
}

function missing(path: string, call: string): Error {
  return Object.assign(new Error(`ENOENT: no such file or directory, ${call} '${path}'`), { code: 'ENOENT' });
}

function crashedError(): Error {
  return new Error('the volatile file system crashed: this process is dead');
}

/** An open file of a VolatileFiles. */
class VolatileFile {
  constructor(
    private readonly files: VolatileFiles,
    private readonly inode: Inode,
  ) {}

  async read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }> {
    await this.files.io();
    const bytesRead = Math.max(0, Math.min(length, this.inode.current.length - position));
    if (bytesRead > 0) this.inode.current.copy(buffer, offset, position, position + bytesRead);
    return { bytesRead };
  }

  async write(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesWritten: number }> {
    await this.files.io();
    const { current } = this.inode;
    const grown = Buffer.alloc(Math.max(current.length, position + length));
    current.copy(grown);
    buffer.copy(grown, position, offset, offset + length);
    this.inode.current = grown;
    return { bytesWritten: length };
  }

  /** What was written before the call is on the disk once it resolves, unless the machine crashed meanwhile. */
  async datasync(): Promise<void> {
    const flushed = Buffer.from(this.inode.current);
    await this.files.io(this.files.syncMs);
    this.inode.durable = flushed;
    this.files.syncs += 1;
  }

  async stat(): Promise<{ size: number }> {
    await this.files.io();
    return { size: this.inode.current.length };
  }

  async close(): Promise<void> {
    await this.files.io();
  }
}

/**
 * A file system in memory, for the usage spool, that loses on a crash what a real one may lose: the bytes
 * not synced by datasync, and the names (new or removed) not synced by syncDirectory. `crash()` kills this
 * one (every later call fails, as nothing of a dead process reaches the disk) and returns the file system
 * the next process finds. Files are kept by name only: one directory per instance. mkdir makes the real
 * directory too, for the spool's lock file, which stays on the real file system.
 */
export class VolatileFiles {
  /** The directory as the process sees it, and as the disk holds it. */
  private names = new Map<string, Inode>();
  private durableNames = new Map<string, Inode>();
  private crashed = false;
  /** Completed datasyncs. */
  syncs = 0;

  /** `syncMs`: how long a datasync takes (a disk's latency). */
  constructor(readonly syncMs = 0) {}

  /** One call's latency: a turn of the event loop, or `ms`; fails once crashed, even if the call began before. */
  async io(ms = 0): Promise<void> {
    if (this.crashed) throw crashedError();
    await new Promise((resolve) => (ms > 0 ? setTimeout(resolve, ms) : setImmediate(resolve)));
    if (this.crashed) throw crashedError();
  }

  async open(path: string, flags: 'r' | 'r+' | 'w+' | 'wx'): Promise<VolatileFile> {
    await this.io();
    const name = basename(path);
    let inode = this.names.get(name);
    if (flags === 'wx' && inode) {
      throw Object.assign(new Error(`EEXIST: file already exists, open '${path}'`), { code: 'EEXIST' });
    }
    if (flags === 'wx' || flags === 'w+') {
      if (inode) inode.current = Buffer.alloc(0);
      else {
        inode = { current: Buffer.alloc(0), durable: Buffer.alloc(0) };
        this.names.set(name, inode);
      }
    }
    if (!inode) throw missing(path, 'open');
    return new VolatileFile(this, inode);
  }

  async readdir(): Promise<string[]> {
    await this.io();
    return [...this.names.keys()];
  }

  async unlink(path: string): Promise<void> {
    await this.io();
    if (!this.names.delete(basename(path))) throw missing(path, 'unlink');
  }

  async rename(from: string, to: string): Promise<void> {
    await this.io();
    const inode = this.names.get(basename(from));
    if (!inode) throw missing(from, 'rename');
    this.names.delete(basename(from));
    this.names.set(basename(to), inode);
  }

  async mkdir(dir: string): Promise<void> {
    await this.io();
    await mkdir(dir, { recursive: true });
  }

  async syncDirectory(): Promise<void> {
    const entries = new Map(this.names);
    await this.io(this.syncMs);
    this.durableNames = entries;
  }

  /** The names and bytes on the disk now, as a crash would leave them. */
  durableFiles(): Map<string, Buffer> {
    return new Map([...this.durableNames].map(([name, inode]) => [name, Buffer.from(inode.durable)]));
  }

  /**
   * The machine stops: what was not synced is lost and every later call of this process fails. Returns
   * the file system the next start finds: the synced names with their synced bytes.
   */
  crash(): VolatileFiles {
    this.crashed = true;
    const next = new VolatileFiles(this.syncMs);
    for (const [name, bytes] of this.durableFiles()) {
      const inode = { current: bytes, durable: Buffer.from(bytes) };
      next.names.set(name, inode);
      next.durableNames.set(name, inode);
    }
    return next;
  }
}
