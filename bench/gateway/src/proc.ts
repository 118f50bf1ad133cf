import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** CPU time and memory of processes, from Linux's /proc. */

interface ProcStat {
  ppid: number;
  /** When it started, in clock ticks since boot. */
  startTicks: number;
  /** utime + stime + cutime + cstime, in clock ticks: its own CPU and that of its reaped children. */
  ticks: number;
}

function clockTicksPerSecond(): number {
  try {
    const value = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isInteger(value) && value > 0 ? value : 100;
  } catch {
    return 100;
  }
}

const msPerTick = 1_000 / clockTicksPerSecond();

function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); ppid is field 4, utime..cstime are fields 14 to 17.
  const field = (number: number) => Number(fields[number - 3]);
  return { ppid: field(4), startTicks: field(22), ticks: field(14) + field(15) + field(16) + field(17) };
}

function livePids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
}

/**
 * CPU milliseconds of each process tree, keyed like the input. A tree is the process and its live
 * descendants (PostgreSQL serves each connection from a child); children that ended are in their
 * parent's cutime/cstime, so the sum stays continuous as backends come and go.
 */
export function cpuMsOfTrees(roots: ReadonlyMap<string, number>): Map<string, number> {
  const stats = new Map<number, ProcStat>();
  for (const pid of livePids()) {
    const stat = readStat(pid);
    if (stat) stats.set(pid, stat);
  }
  const children = new Map<number, number[]>();
  for (const [pid, stat] of stats) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), pid]);
  const treeTicks = (pid: number): number =>
    (stats.get(pid)?.ticks ?? 0) + (children.get(pid) ?? []).reduce((sum, child) => sum + treeTicks(child), 0);
  return new Map([...roots].map(([name, pid]) => [name, treeTicks(pid) * msPerTick]));
}

/** How long ago the process started, in milliseconds; undefined when it is gone. */
export function processAgeMs(pid: number): number | undefined {
  const stat = readStat(pid);
  if (!stat) return undefined;
  const uptimeSeconds = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  return uptimeSeconds * 1_000 - stat.startTicks * msPerTick;
}

/** VmRSS in bytes; 0 when the process is gone. */
export function residentBytes(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * Proportional set size in bytes (Pss of /proc/<pid>/smaps_rollup): each resident page divided by the number of
 * processes that map it, so that the node binary's pages, which every service maps, count once over the six
 * where RSS counts them six times. 0 when the process is gone.
 */
export function proportionalBytes(pid: number): number {
  try {
    const match = /^Pss:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Inodes of the sockets listening on a TCP port (IPv4 or IPv6). */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  const portHex = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const columns = line.trim().split(/\s+/);
      // local_address is column 1 (address:port in hex), st column 3 (0A = LISTEN), inode column 9.
      if (columns[1]?.endsWith(`:${portHex}`) && columns[3] === '0A' && columns[9]) inodes.add(columns[9]);
    }
  }
  return inodes;
}

/**
 * The process listening on a loopback port, found through its socket's inode, whoever started it
 * (infra.sh records pids only of what it started itself). Undefined when not found or not readable.
 */
export function pidListeningOn(port: number): number | undefined {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return undefined;
  const sockets = new Set([...inodes].map((inode) => `socket:[${inode}]`));
  const owners: number[] = [];
  for (const pid of livePids()) {
    let descriptors: string[];
    try {
      descriptors = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const descriptor of descriptors) {
      try {
        if (sockets.has(readlinkSync(`/proc/${pid}/fd/${descriptor}`))) {
          owners.push(pid);
          break;
        }
      } catch {
        // The descriptor closed while we looked.
      }
    }
  }
  // A forking server's children may share the listening socket: the parent is the one to measure.
  return owners.find((pid) => !owners.includes(readStat(pid)?.ppid ?? -1));
}
