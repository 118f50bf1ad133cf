import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { waitUntil } from '@gw/testing';

const run = promisify(execFile);
const host = '127.0.0.1';

export interface ClusterNode {
  host: string;
  port: number;
}

interface Member {
  port: number;
  process: ChildProcess;
  exited: Promise<void>;
  /** True once the process has exited or failed to start. */
  gone: boolean;
  /** The last few kilobytes the server printed, to explain a failed start. */
  output: string;
}

/** True when `promise` settles within `ms`; the timer does not outlive it. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/** Thrown by a check to stop waiting at once. */
class GaveUp extends Error {}

/**
 * Polls `check` until it returns true (a thrown error counts as "not yet", except GaveUp), or fails
 * after `timeoutMs` naming what it waited for.
 */
async function waitFor(what: () => string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  let gaveUp: GaveUp | undefined;
  const probe = () =>
    check().catch((error: unknown) => {
      if (!(error instanceof GaveUp)) throw error;
      gaveUp = error;
      return true;
    });
  await waitUntil(probe, { what: 'the redis cluster', timeoutMs, intervalMs: 100 }).catch((error: Error) => {
    throw new Error(`redis cluster: ${error.message} (${what()})`);
  });
  if (gaveUp) throw gaveUp;
}

async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, host, () => probe.close(() => resolve(true)));
  });
}

/**
 * A real Redis Cluster of masters only (no replicas), on loopback, from the redis-server and redis-cli
 * on the PATH (Debian's 7.0). Every node runs in the foreground as a child of this process, with its
 * config file and data in one temporary directory. `stop()` kills whatever `start()` got to, so call
 * it from afterAll even when start failed.
 */
export class LocalRedisCluster {
  readonly nodes: ClusterNode[];
  private readonly members: Member[] = [];
  private dir: string | undefined;
  private readonly killOnExit = () => {
    for (const member of this.members) member.process.kill('SIGKILL');
  };

  constructor(
    ports: number[],
    private readonly binaries = { server: 'redis-server', cli: 'redis-cli' },
  ) {
    this.nodes = ports.map((port) => ({ host, port }));
  }

  async start(): Promise<void> {
    // A node also listens on its cluster bus port, its port + 10000.
    for (const { port } of this.nodes) {
      for (const needed of [port, port + 10_000]) {
        if (!(await portIsFree(needed))) {
          throw new Error(
            `redis cluster: port ${needed} is in use (a node left by an interrupted run? ` +
              `redis-cli -p ${port} shutdown nosave)`,
          );
        }
      }
    }
    this.dir = await mkdtemp(join(tmpdir(), 'gw-redis-cluster-'));
    process.once('exit', this.killOnExit);
    for (const { port } of this.nodes) this.members.push(this.spawnNode(port, this.dir));

    await Promise.all(
      this.members.map((member) =>
        waitFor(
          () => `node ${member.port} to answer PING${this.tail(member)}`,
          10_000,
          async () => {
            if (member.gone) {
              throw new GaveUp(`redis cluster: node ${member.port} exited${this.tail(member)}`);
            }
            return (await this.cli(member.port, 'PING')) === 'PONG';
          },
        ),
      ),
    );
    const addresses = this.nodes.map((node) => `${node.host}:${node.port}`);
    await run(this.binaries.cli, ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes'], {
      timeout: 20_000,
    });
    await waitFor(
      () => 'cluster_state:ok on every node',
      15_000,
      async () => {
        const infos = await Promise.all(this.nodes.map((node) => this.cli(node.port, 'CLUSTER', 'INFO')));
        return infos.every(
          (info) =>
            info.includes('cluster_state:ok') &&
            info.includes('cluster_slots_ok:16384') &&
            info.includes(`cluster_known_nodes:${this.nodes.length}`),
        );
      },
    );
  }

  /** Stops every node (SIGTERM, then SIGKILL after 3 s) and removes the temporary directory. */
  async stop(): Promise<void> {
    await Promise.all(
      this.members.map(async (member) => {
        if (member.gone) return;
        member.process.kill('SIGTERM');
        if (!(await settlesWithin(member.exited, 3_000))) {
          member.process.kill('SIGKILL');
          await settlesWithin(member.exited, 2_000);
        }
      }),
    );
    process.removeListener('exit', this.killOnExit);
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }

  private spawnNode(port: number, dir: string): Member {
    const child = spawn(
      this.binaries.server,
      [
        '--port',
        String(port),
        '--bind',
        host,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        '5000',
        '--dir',
        dir,
        '--daemonize',
        'no',
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const member: Member = {
      port,
      process: child,
      gone: false,
      exited: new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        // A binary that cannot be started emits 'error' and may never emit 'exit'.
        child.once('error', (error) => {
          keep(Buffer.from(`spawn failed: ${error.message}\n`));
          resolve();
        });
      }).then(() => {
        member.gone = true;
      }),
      output: '',
    };
    function keep(chunk: Buffer) {
      member.output = (member.output + chunk.toString()).slice(-4_000);
    }
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    return member;
  }

  private tail(member: Member): string {
    const lines = member.output.trim().split('\n').slice(-5).join('\n');
    return lines ? `; it printed:\n${lines}` : '';
  }

  private async cli(port: number, ...command: string[]): Promise<string> {
    const { stdout } = await run(this.binaries.cli, ['-h', host, '-p', String(port), ...command], { timeout: 2_000 });
    return stdout.trim();
  }
}
