import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VolatileFiles } from '../src';

describe('VolatileFiles', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'volatile-files-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const read = async (files: VolatileFiles, name: string) => {
    const file = await files.open(join(dir, name), 'r');
    const buffer = Buffer.alloc((await file.stat()).size);
    await file.read(buffer, 0, buffer.length, 0);
    return buffer.toString();
  };

  it('keeps across a crash only the bytes a datasync and the names a directory sync made durable', async () => {
    const files = new VolatileFiles();
    const synced = await files.open(join(dir, 'synced'), 'wx');
    await synced.write(Buffer.from('kept'), 0, 4, 0);
    await synced.datasync();
    await synced.write(Buffer.from(' lost'), 0, 5, 4);
    const unnamed = await files.open(join(dir, 'unnamed'), 'wx');
    await unnamed.write(Buffer.from('data'), 0, 4, 0);
    await unnamed.datasync();
    expect(await read(files, 'synced')).toBe('kept lost');
    // The name of `synced` is durable, that of `unnamed` is not (created after the directory sync).
    await files.unlink(join(dir, 'unnamed'));
    await files.syncDirectory();
    const reopened = await files.open(join(dir, 'unnamed'), 'wx');
    await reopened.datasync();
    await files.unlink(join(dir, 'synced'));

    const after = files.crash();
    // The removal of `synced` was never synced: it comes back with its synced bytes; `unnamed` is gone.
    expect((await after.readdir()).sort()).toEqual(['synced']);
    expect(await read(after, 'synced')).toBe('kept');
  });

  it('fails every call of the crashed process, even one begun before the crash', async () => {
    const files = new VolatileFiles(5);
    const file = await files.open(join(dir, 'f'), 'wx');
    await file.write(Buffer.from('x'), 0, 1, 0);
    const sync = file.datasync();
    const after = files.crash();
    await expect(sync).rejects.toThrow(/crashed/);
    await expect(files.readdir()).rejects.toThrow(/crashed/);
    expect(await after.readdir()).toEqual([]);
  });
});
