import { readFile } from 'node:fs/promises';
import { pidOf, serviceNames } from '@gw/local-stack';
import type { StateDir } from '@gw/local-stack';

/** One RSS reading of one process of the stack. */
interface Sample {
  atMs: number;
  rssBytes: number;
}

/** The readings of one process instance (a restarted service is a new instance). */
export interface Instance {
  name: string;
  pid: number;
  firstSeenMs: number;
  samples: Sample[];
}

export interface MemoryVerdict {
  name: string;
  pid: number;
  /** Seconds into the run when the instance was first seen. */
  startedS: number;
  /** Median RSS over the window after warm-up, and over the last window of the run, in bytes. */
  warmMedian?: number;
  endMedian?: number;
  growthBytes?: number;
  boundBytes?: number;
  /** Why it was not judged (it started too late to have both windows). */
  notJudged?: string;
  ok: boolean;
}

const MB = 1024 * 1024;

/** Growth allowed after warm-up: a quarter of the warm RSS, and never less than 16 MB (GC and JIT noise). */
export const growthBound = (warmBytes: number) => Math.max(16 * MB, 0.25 * warmBytes);

async function rssOf(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
  const line = status?.split('\n').find((text) => text.startsWith('VmRSS:'));
  return line === undefined ? undefined : Number(line.split(/\s+/)[1]) * 1024;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

/** Samples the RSS of every service of the stack (by its pid file) every `everyMs`. */
export class MemorySampler {
  private readonly instances = new Map<string, Instance>();
  private timer: NodeJS.Timeout | undefined;
  private everyMs = 5_000;

  constructor(
    private readonly state: StateDir,
    private readonly startedMs: number,
  ) {}

  start(everyMs: number): void {
    this.everyMs = everyMs;
    const tick = () => {
      void this.sample().finally(() => {
        if (this.timer !== undefined) this.timer = setTimeout(tick, everyMs);
      });
    };
    this.timer = setTimeout(tick, 0);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  async sample(): Promise<void> {
    const atMs = Date.now() - this.startedMs;
    for (const name of serviceNames) {
      const pid = await pidOf(this.state, name);
      if (pid === undefined) continue;
      const rssBytes = await rssOf(pid);
      if (rssBytes === undefined) continue;
      const id = `${name}:${pid}`;
      let instance = this.instances.get(id);
      if (instance === undefined) {
        instance = { name, pid, firstSeenMs: atMs, samples: [] };
        this.instances.set(id, instance);
      }
      instance.samples.push({ atMs, rssBytes });
    }
  }

  /**
   * Per process instance (a restarted service is judged twice: before and after its restart): the median RSS
   * over `windowMs` once warm (from `warmupMs` after the run's start, or after the instance's own start) against
   * the median over the last `windowMs` of its life; growth beyond growthBound fails. An instance too short-lived
   * for both windows is listed, not judged.
   */
  verdicts(warmupMs: number, windowMs: number, endMs: number): MemoryVerdict[] {
    const verdicts: MemoryVerdict[] = [];
    for (const instance of this.instances.values()) {
      const last = instance.samples.at(-1)!;
      const alive = endMs - last.atMs <= 3 * this.everyMs;
      const lifeEnd = alive ? endMs : last.atMs;
      const life = alive ? '' : ` (until ${Math.round(last.atMs / 1_000)} s)`;
      const warmFrom = Math.max(warmupMs, instance.firstSeenMs + warmupMs);
      const endFrom = lifeEnd - windowMs;
      const base = {
        name: `${instance.name}${life}`,
        pid: instance.pid,
        startedS: Math.round(instance.firstSeenMs / 1_000),
      };
      if (warmFrom + windowMs > endFrom) {
        verdicts.push({ ...base, notJudged: 'too short-lived for a warm and an end window', ok: true });
        continue;
      }
      const warm = instance.samples.filter((s) => s.atMs >= warmFrom && s.atMs < warmFrom + windowMs);
      const end = instance.samples.filter((s) => s.atMs >= endFrom && s.atMs <= lifeEnd);
      if (warm.length === 0 || end.length === 0) {
        verdicts.push({ ...base, notJudged: 'no samples in a window', ok: false });
        continue;
      }
      const warmMedian = median(warm.map((s) => s.rssBytes));
      const endMedian = median(end.map((s) => s.rssBytes));
      const growthBytes = endMedian - warmMedian;
      const boundBytes = growthBound(warmMedian);
      verdicts.push({ ...base, warmMedian, endMedian, growthBytes, boundBytes, ok: growthBytes <= boundBytes });
    }
    return verdicts.sort(
      (a, b) => a.name.split(' ')[0]!.localeCompare(b.name.split(' ')[0]!) || a.startedS - b.startedS,
    );
  }
}

export const megabytes = (bytes: number | undefined) => (bytes === undefined ? '-' : `${(bytes / MB).toFixed(1)} MB`);
