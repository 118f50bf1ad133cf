import { spawn } from 'node:child_process';
import { mkdir, open, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { GrpcTransport } from '@gw/config';
import { isServing } from '@gw/grpc';
import type { StateDir } from './layout';

export type HealthCheck = { kind: 'grpc'; address: string; transport: GrpcTransport } | { kind: 'http'; url: string };

export interface ProcessSpec {
  name: string;
  /** The compiled entry point, relative to the repository root. */
  script: string;
  /** Flags for node itself, before the script; e.g. --cpu-prof, which NODE_OPTIONS does not accept. */
  nodeFlags?: string[];
  /** A program other than node (the trace viewer): its path and arguments, run instead of the script. */
  command?: string[];
  env: Record<string, string>;
  health: HealthCheck;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function pidOf(state: StateDir, name: string): Promise<number | undefined> {
  try {
    const pid = Number((await readFile(join(state.run, `${name}.pid`), 'utf8')).trim());
    return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

export async function isHealthy(check: HealthCheck): Promise<boolean> {
  if (check.kind === 'grpc') return isServing(check.address, check.transport, 1_000);
  try {
    const response = await fetch(check.url, { signal: AbortSignal.timeout(1_000) });
    return response.ok;
  } catch {
    return false;
  }
}

/** Starts a service in the background, detached, with its output in logs/<name>.log. */
export async function startProcess(state: StateDir, repoRoot: string, spec: ProcessSpec): Promise<number> {
  await mkdir(state.logs, { recursive: true });
  await mkdir(state.run, { recursive: true });
  const log = await open(join(state.logs, `${spec.name}.log`), 'a');
  const [file, ...args] = spec.command ?? [process.execPath, ...(spec.nodeFlags ?? []), join(repoRoot, spec.script)];
  const child = spawn(file!, args, {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', ...spec.env },
    detached: true,
    stdio: ['ignore', log.fd, log.fd],
  });
  child.unref();
  await log.close();
  await writeFile(join(state.run, `${spec.name}.pid`), `${child.pid}\n`);
  return child.pid!;
}

/** Waits until every check passes; fails naming the services that did not come up and their logs. */
export async function waitHealthy(state: StateDir, specs: ProcessSpec[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let pending = specs;
  while (pending.length > 0) {
    const results = await Promise.all(pending.map((spec) => isHealthy(spec.health)));
    pending = pending.filter((_, index) => !results[index]);
    if (pending.length === 0) return;
    for (const spec of pending) {
      if ((await pidOf(state, spec.name)) === undefined) {
        throw new Error(`${spec.name} exited during start; see ${join(state.logs, `${spec.name}.log`)}`);
      }
    }
    if (Date.now() > deadline) {
      throw new Error(
        `not healthy after ${timeoutMs} ms: ${pending.map((spec) => `${spec.name} (${join(state.logs, `${spec.name}.log`)})`).join(', ')}`,
      );
    }
    await sleep(200);
  }
}

/** Stops a service started by startProcess: SIGTERM, then SIGKILL after graceMs. */
export async function stopProcess(state: StateDir, name: string, graceMs = 25_000): Promise<void> {
  const pid = await pidOf(state, name);
  if (pid !== undefined) {
    process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    while (isAlive(pid) && Date.now() < deadline) await sleep(100);
    if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    while (isAlive(pid)) await sleep(50);
  }
  await rm(join(state.run, `${name}.pid`), { force: true });
}
