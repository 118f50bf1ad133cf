import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where a process spent its CPU, from the .cpuprofile files `node --cpu-prof` writes at exit: self
 * time by function and by package (a node_modules package, a node: core module, a workspace folder),
 * so that grpc-js, protobuf, kafkajs, express, pino and the gateway's own code can be told apart.
 */

/** The parts of V8's profile format (Chrome DevTools Protocol `Profiler.Profile`) read here. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples?: number[];
  /** Microseconds between consecutive samples; timeDeltas[i] precedes samples[i]. */
  timeDeltas?: number[];
}

export interface Ranked {
  name: string;
  selfMs: number;
}

export interface ProfileSummary {
  /** Sampled wall time after the skipped start, idle included. */
  sampledMs: number;
  idleMs: number;
  functions: Ranked[];
  packages: Ranked[];
}

/** V8's pseudo-frames: not JavaScript, but worth seeing (GC, and native code outside any function). */
const pseudoFrames = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);
/** Node's native write bindings: their self time is mostly the write system call (sockets, stdout). */
const nativeWrites = new Set(['writev', 'writeBuffer', 'writeString', 'writeUtf8String', 'writeLatin1String']);

/** A path readable in a table: repository-relative, with pnpm's store path collapsed. */
function shortPath(url: string, repoRoot: string): string {
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  const inModules = path.lastIndexOf('/node_modules/');
  if (inModules >= 0) return path.slice(inModules + 1);
  return path.startsWith(repoRoot) ? relative(repoRoot, path) : path;
}

export function packageOf(url: string, functionName: string, repoRoot: string): string {
  if (url === '') {
    if (pseudoFrames.has(functionName)) return functionName;
    return nativeWrites.has(functionName) ? '(native writes: sockets, files)' : '(V8 builtins, native)';
  }
  if (url.startsWith('node:')) {
    const module = url.slice('node:'.length).replace(/^internal\//, '');
    return `node:${module.split('/')[0]}`;
  }
  const path = shortPath(url, repoRoot);
  if (path.startsWith('node_modules/')) {
    const [first, second] = path.slice('node_modules/'.length).split('/');
    return first?.startsWith('@') ? `${first}/${second}` : (first ?? path);
  }
  // Workspace code: services/<name>, packages/<name>, deploy/local, …
  const [top, name] = path.split('/');
  return top !== undefined && name !== undefined && !path.startsWith('/') ? `${top}/${name}` : path;
}

function ranked(totals: Map<string, number>, count: number): Ranked[] {
  return [...totals]
    .map(([name, selfMs]) => ({ name, selfMs }))
    .sort((a, b) => b.selfMs - a.selfMs)
    .slice(0, count);
}

/**
 * Summarises every .cpuprofile in a directory (one process may write several, e.g. with workers),
 * leaving out the first `skipFirstMs` of each: the start-up (loading modules), which is no request's cost.
 */
export async function summariseProfiles(
  directory: string,
  repoRoot: string,
  options: { skipFirstMs: number; top: number },
): Promise<ProfileSummary> {
  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  let sampledMs = 0;
  let idleMs = 0;
  const files = (await readdir(directory)).filter((file) => file.endsWith('.cpuprofile'));
  for (const file of files) {
    const profile = JSON.parse(await readFile(join(directory, file), 'utf8')) as CpuProfile;
    const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
    const samples = profile.samples ?? [];
    const deltas = profile.timeDeltas ?? [];
    let elapsedMs = 0;
    samples.forEach((nodeId, index) => {
      elapsedMs += (deltas[index] ?? 0) / 1_000;
      // A sample lasts until the next one; the last has no known end and is left out.
      const ms = (deltas[index + 1] ?? 0) / 1_000;
      const frame = frames.get(nodeId);
      if (!frame || ms <= 0 || elapsedMs < options.skipFirstMs) return;
      sampledMs += ms;
      if (frame.functionName === '(idle)') {
        idleMs += ms;
        return;
      }
      const where = frame.url === '' ? '' : ` ${shortPath(frame.url, repoRoot)}:${frame.lineNumber + 1}`;
      const name = `${frame.functionName || '(anonymous)'}${where}`;
      byFunction.set(name, (byFunction.get(name) ?? 0) + ms);
      const pkg = packageOf(frame.url, frame.functionName, repoRoot);
      byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + ms);
    });
  }
  if (files.length === 0) throw new Error(`no .cpuprofile in ${directory}`);
  return {
    sampledMs,
    idleMs,
    functions: ranked(byFunction, options.top),
    packages: ranked(byPackage, options.top),
  };
}
