import { mkdir, open, readdir, rename, unlink } from 'node:fs/promises';

/** The calls the spool makes on an open file: positioned reads and writes, syncs. */
export interface SpoolFile {
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  write(buffer: Buffer, offset: number, length: number, position: number): Promise<unknown>;
  /** The file's data reaches the disk (not its name: see SpoolFiles.syncDirectory). */
  datasync(): Promise<void>;
  stat(): Promise<{ size: number }>;
  close(): Promise<void>;
}

/**
 * The file system under the spool. The node one in production; a test puts a layer here that keeps
 * what was not synced apart and loses it when the test "crashes" the machine.
 */
export interface SpoolFiles {
  /** `flags` as node's: `r`, `r+`, `w+`, `wx` (create, failing if the name exists). */
  open(path: string, flags: 'r' | 'r+' | 'w+' | 'wx'): Promise<SpoolFile>;
  readdir(dir: string): Promise<string[]>;
  unlink(path: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  mkdir(dir: string): Promise<void>;
  /** Makes the directory's entries (new or removed names) survive a crash. */
  syncDirectory(dir: string): Promise<void>;
}

export const nodeSpoolFiles: SpoolFiles = {
  open: (path, flags) => open(path, flags),
  readdir: (dir) => readdir(dir),
  unlink: (path) => unlink(path),
  rename: (from, to) => rename(from, to),
  mkdir: async (dir) => {
    await mkdir(dir, { recursive: true });
  },
  syncDirectory: async (dir) => {
    const directory = await open(dir, 'r');
    try {
      await directory.sync();
    } finally {
      await directory.close();
    }
  },
};
