import { readFile } from 'node:fs/promises';
import WebSocket from 'ws';

/**
 * What a process holds right after a full, memory-reducing collection, read through its inspector (the soak
 * starts every process with `--inspect=127.0.0.1:0`; no service has a collection trigger of its own, so
 * nothing of this exists in production).
 */
export interface CollectedMemory {
  pid: number;
  rssBytes: number;
  heapUsedBytes: number;
  /** Memory of C++ objects bound to JavaScript ones, Buffers and ArrayBuffers included. */
  externalBytes: number;
  arrayBuffersBytes: number;
  oldSpaceUsedBytes: number;
  oldSpaceSizeBytes: number;
}

const listening = /Debugger listening on (ws:\/\/127\.0\.0\.1:\d+\/[0-9a-f-]+)/g;

/** The inspector URL the process that logs to `logPath` printed last (a restarted service appends its own). */
export async function inspectorUrlOf(logPath: string): Promise<string | undefined> {
  const log = await readFile(logPath, 'utf8').catch(() => '');
  return [...log.matchAll(listening)].at(-1)?.[1];
}

const evaluated = `JSON.stringify({
  pid: process.pid,
  memory: process.memoryUsage(),
  old: require('node:v8').getHeapSpaceStatistics().find((space) => space.space_name === 'old_space'),
})`;

/**
 * Forces V8's memory-reducing collection (`HeapProfiler.collectGarbage`: full collections until nothing more is
 * freed, unused pages given back), then reads the process's memory. Fails after `timeoutMs`.
 */
export async function collectedMemory(url: string, timeoutMs = 15_000): Promise<CollectedMemory> {
  const socket = new WebSocket(url, { perMessageDeflate: false });
  const pending = new Map<number, (result: unknown) => void>();
  let nextId = 1;
  const failed = new Promise<never>((_, reject) => {
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`inspector ${url} closed`)));
  });
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string } };
    if (message.id === undefined) return;
    pending.get(message.id)?.(message.error ? new Error(message.error.message) : message.result);
  });
  const call = (method: string, params: object = {}) =>
    Promise.race([
      failed,
      new Promise<unknown>((resolve, reject) => {
        const id = nextId++;
        pending.set(id, (result) => (result instanceof Error ? reject(result) : resolve(result)));
        socket.send(JSON.stringify({ id, method, params }));
      }),
    ]);
  const timer = setTimeout(() => socket.terminate(), timeoutMs);
  try {
    await Promise.race([failed, new Promise((resolve) => socket.once('open', resolve))]);
    await call('HeapProfiler.collectGarbage');
    const evaluation = (await call('Runtime.evaluate', {
      expression: evaluated,
      includeCommandLineAPI: true,
      returnByValue: true,
    })) as { result: { value?: string }; exceptionDetails?: { text: string } };
    if (evaluation.exceptionDetails || evaluation.result.value === undefined) {
      throw new Error(`inspector ${url}: ${evaluation.exceptionDetails?.text ?? 'no value'}`);
    }
    const read = JSON.parse(evaluation.result.value) as {
      pid: number;
      memory: NodeJS.MemoryUsage;
      old: { space_used_size: number; space_size: number };
    };
    return {
      pid: read.pid,
      rssBytes: read.memory.rss,
      heapUsedBytes: read.memory.heapUsed,
      externalBytes: read.memory.external,
      arrayBuffersBytes: read.memory.arrayBuffers,
      oldSpaceUsedBytes: read.old.space_used_size,
      oldSpaceSizeBytes: read.old.space_size,
    };
  } finally {
    clearTimeout(timer);
    socket.removeAllListeners('close');
    socket.on('error', () => undefined);
    socket.close();
  }
}

/** Every process of the soak's stack opens its inspector on a free loopback port, for collectedMemory. */
export const soakNodeFlags = ['--inspect=127.0.0.1:0'];
