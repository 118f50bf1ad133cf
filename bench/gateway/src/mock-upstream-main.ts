import { startMockUpstream } from './mock-upstream';
import type { MockUpstream } from './mock-upstream';

/**
 * The mock upstream as a process of its own, so that its CPU is neither the gateway's nor the load
 * generator's. Arguments: one `port:latencyMs` per listener. It reports `{ urls }` over IPC once every
 * listener is up and exits when the benchmark disconnects.
 */
async function main(): Promise<void> {
  const listeners = process.argv.slice(2).map((argument) => {
    const match = /^(\d+):(\d+)$/.exec(argument);
    if (!match) throw new Error(`expected port:latencyMs, got ${JSON.stringify(argument)}`);
    return { port: Number(match[1]), latencyMs: Number(match[2]) };
  });
  const upstreams: MockUpstream[] = [];
  for (const listener of listeners) {
    upstreams.push(await startMockUpstream({ host: '127.0.0.1', ...listener }));
  }
  // Ctrl-C reaches the whole process group; the benchmark decides when this process ends.
  process.on('SIGINT', () => undefined);
  process.once('disconnect', () => {
    void Promise.all(upstreams.map((upstream) => upstream.close())).finally(() => process.exit(0));
  });
  process.send!({ urls: upstreams.map((upstream) => upstream.url) });
}

main().catch((error: unknown) => {
  process.stderr.write(`mock upstream: ${(error as Error).message}\n`);
  process.exit(1);
});
