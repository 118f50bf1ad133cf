import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pidOf, serviceNames } from '@gw/local-stack';
import type { StateDir } from '@gw/local-stack';
import { collectedMemory, inspectorUrlOf } from './inspector';
import type { CollectedMemory } from './inspector';

/** One RSS reading of one process of the stack, between collections (as V8 left it). */
interface Sample {
  atMs: number;
  rssBytes: number;
}

/** One reading right after a forced, memory-reducing collection. */
interface Collected extends CollectedMemory {
  atMs: number;
}

/** The readings of one process instance (a restarted service is a new instance). */
export interface Instance {
  name: string;
  pid: number;
  firstSeenMs: number;
  samples: Sample[];
  collected: Collected[];
  /** Collections that failed (the inspector did not answer in time, the process was stopping). */
  collectFailures: number;
}

/** The figures judged after a forced collection: what the process keeps, not what V8 has not yet collected. */
export const judgedFigures = ['rssBytes', 'heapUsedBytes', 'externalBytes'] as const;
export type JudgedFigure = (typeof judgedFigures)[number];

export interface FigureVerdict {
  figure: JudgedFigure;
  warmMedian: number;
  endMedian: number;
  growthBytes: number;
  boundBytes: number;
  ok: boolean;
}

export interface MemoryVerdict {
  name: string;
  pid: number;
  /** Seconds into the run when the instance was first seen. */
  startedS: number;
  /** RSS between collections, not judged: the median over the window after warm-up and over the last window. */
  rssWarmMedian?: number;
  rssEndMedian?: number;
  /** The judged figures after a forced collection, warm window against the end window. */
  figures?: FigureVerdict[];
  /** The old space's size and use at the last collection (its floor: docs/performance.md). */
  oldSpaceSizeBytes?: number;
  oldSpaceUsedBytes?: number;
  collectFailures: number;
  /** Why it was not judged (it started too late to have both windows). */
  notJudged?: string;
  ok: boolean;
}

const MB = 1024 * 1024;

/**
 * Growth allowed after warm-up, after a forced collection: a quarter of the warm figure, and never less than
 * 16 MB for RSS (the allocator keeps freed pages, code space grows as more paths are compiled) and 8 MB for
 * the heap and external memory.
 */
export const growthBound = (figure: JudgedFigure, warmBytes: number) =>
  Math.max(figure === 'rssBytes' ? 16 * MB : 8 * MB, 0.25 * warmBytes);

async function rssOf(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
  const line = status?.split('\n').find((text) => text.startsWith('VmRSS:'));
  return line === undefined ? undefined : Number(line.split(/\s+/)[1]) * 1024;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

/**
 * Samples the RSS of every service of the stack (by its pid file) every `everyMs`, and every `collectEveryMs`
 * forces a collection in each through its inspector and reads what it then holds.
 */
export class MemorySampler {
  private readonly instances = new Map<string, Instance>();
  private timers: NodeJS.Timeout[] = [];
  private running = false;
  private everyMs = 5_000;

  constructor(
    private readonly state: StateDir,
    private readonly startedMs: number,
  ) {}

  start(everyMs: number, collectEveryMs: number): void {
    this.everyMs = everyMs;
    this.running = true;
    const loop = (work: () => Promise<void>, intervalMs: number, slot: number) => {
      const tick = () => {
        void work().finally(() => {
          if (this.running) this.timers[slot] = setTimeout(tick, intervalMs);
        });
      };
      this.timers[slot] = setTimeout(tick, 0);
    };
    loop(() => this.sample(), everyMs, 0);
    loop(() => this.collect(), collectEveryMs, 1);
  }

  stop(): void {
    this.running = false;
    for (const timer of this.timers) clearTimeout(timer);
  }

  private instanceOf(name: string, pid: number, atMs: number): Instance {
    const id = `${name}:${pid}`;
    let instance = this.instances.get(id);
    if (instance === undefined) {
      instance = { name, pid, firstSeenMs: atMs, samples: [], collected: [], collectFailures: 0 };
      this.instances.set(id, instance);
    }
    return instance;
  }

  async sample(): Promise<void> {
    const atMs = Date.now() - this.startedMs;
    for (const name of serviceNames) {
      const pid = await pidOf(this.state, name);
      if (pid === undefined) continue;
      const rssBytes = await rssOf(pid);
      if (rssBytes === undefined) continue;
      this.instanceOf(name, pid, atMs).samples.push({ atMs, rssBytes });
    }
  }

  /** One forced collection in each running process, one process at a time. */
  async collect(): Promise<void> {
    for (const name of serviceNames) {
      const pid = await pidOf(this.state, name);
      if (pid === undefined) continue;
      const atMs = Date.now() - this.startedMs;
      const instance = this.instanceOf(name, pid, atMs);
      const url = await inspectorUrlOf(join(this.state.logs, `${name}.log`));
      const read = url === undefined ? undefined : await collectedMemory(url).catch(() => undefined);
      // Right after a restart the log's last inspector may still be the old process's: not this instance.
      if (read?.pid === pid) instance.collected.push({ ...read, atMs });
      else instance.collectFailures += 1;
    }
  }

  /**
   * Per process instance (a restarted service is judged twice: before and after its restart): the median of each
   * judged figure over `windowMs` once warm (from `warmupMs` after the run's start, or after the instance's own
   * start) against its median over the last `windowMs` of the instance's life; growth beyond growthBound fails.
   * An instance too short-lived for both windows is listed, not judged.
   */
  verdicts(warmupMs: number, windowMs: number, endMs: number): MemoryVerdict[] {
    const verdicts: MemoryVerdict[] = [];
    for (const instance of this.instances.values()) {
      const last = instance.samples.at(-1)?.atMs ?? instance.firstSeenMs;
      const alive = endMs - last <= 3 * this.everyMs;
      const lifeEnd = alive ? endMs : last;
      const life = alive ? '' : ` (until ${Math.round(last / 1_000)} s)`;
      const warmFrom = Math.max(warmupMs, instance.firstSeenMs + warmupMs);
      const endFrom = lifeEnd - windowMs;
      const base = {
        name: `${instance.name}${life}`,
        pid: instance.pid,
        startedS: Math.round(instance.firstSeenMs / 1_000),
        collectFailures: instance.collectFailures,
      };
      if (warmFrom + windowMs > endFrom) {
        verdicts.push({ ...base, notJudged: 'too short-lived for a warm and an end window', ok: true });
        continue;
      }
      const inWarm = ({ atMs }: { atMs: number }) => atMs >= warmFrom && atMs < warmFrom + windowMs;
      const inEnd = ({ atMs }: { atMs: number }) => atMs >= endFrom && atMs <= lifeEnd;
      const warm = instance.collected.filter(inWarm);
      const end = instance.collected.filter(inEnd);
      if (warm.length === 0 || end.length === 0) {
        verdicts.push({ ...base, notJudged: 'no collection in a window', ok: false });
        continue;
      }
      const figures = judgedFigures.map((figure): FigureVerdict => {
        const warmMedian = median(warm.map((read) => read[figure]));
        const endMedian = median(end.map((read) => read[figure]));
        const growthBytes = endMedian - warmMedian;
        const boundBytes = growthBound(figure, warmMedian);
        return { figure, warmMedian, endMedian, growthBytes, boundBytes, ok: growthBytes <= boundBytes };
      });
      const rssWarm = instance.samples.filter(inWarm).map((s) => s.rssBytes);
      const rssEnd = instance.samples.filter(inEnd).map((s) => s.rssBytes);
      verdicts.push({
        ...base,
        figures,
        rssWarmMedian: rssWarm.length > 0 ? median(rssWarm) : undefined,
        rssEndMedian: rssEnd.length > 0 ? median(rssEnd) : undefined,
        oldSpaceSizeBytes: end.at(-1)!.oldSpaceSizeBytes,
        oldSpaceUsedBytes: end.at(-1)!.oldSpaceUsedBytes,
        ok: figures.every((figure) => figure.ok),
      });
    }
    return verdicts.sort(
      (a, b) => a.name.split(' ')[0]!.localeCompare(b.name.split(' ')[0]!) || a.startedS - b.startedS,
    );
  }
}

export const megabytes = (bytes: number | undefined) => (bytes === undefined ? '-' : `${(bytes / MB).toFixed(1)} MB`);

const figureNames: Record<JudgedFigure, string> = { rssBytes: 'rss', heapUsedBytes: 'heap', externalBytes: 'external' };

/** One line per instance: the judged figures after a forced collection, then RSS as V8 left it between them. */
export function describeVerdict(verdict: MemoryVerdict): string {
  const head = `${verdict.name.padEnd(20)} pid ${String(verdict.pid).padEnd(7)} from ${String(verdict.startedS).padStart(4)} s  `;
  if (verdict.notJudged) return `${head}not judged: ${verdict.notJudged}`;
  const signed = (bytes: number) => `${bytes >= 0 ? '+' : ''}${(bytes / MB).toFixed(1)}`;
  const judged = verdict.figures!.map(
    (f) =>
      `${figureNames[f.figure]} ${(f.warmMedian / MB).toFixed(1)} → ${(f.endMedian / MB).toFixed(1)} ` +
      `(${signed(f.growthBytes)}, bound ${(f.boundBytes / MB).toFixed(1)})${f.ok ? '' : ' GREW'}`,
  );
  const between = `rss between collections ${megabytes(verdict.rssWarmMedian)} → ${megabytes(verdict.rssEndMedian)}`;
  const old = `old space ${megabytes(verdict.oldSpaceUsedBytes)} used of ${megabytes(verdict.oldSpaceSizeBytes)}`;
  const failures = verdict.collectFailures > 0 ? `; ${verdict.collectFailures} collections missed` : '';
  return `${head}${judged.join(', ')} MB; ${between}; ${old}${failures}`;
}
