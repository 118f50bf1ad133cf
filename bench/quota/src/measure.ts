import { performance } from 'node:perf_hooks';

/** One way of reaching the quota decision: in-process Limits, or gRPC to a quota process. */
export interface DecisionTarget {
  /** The lease id when admitted, otherwise the refusal's error type. */
  acquire(accountId: string, index: number): Promise<{ leaseId: string } | { refused: string }>;
  release(accountId: string, leaseId: string): Promise<void>;
}

/** CPU seconds a process has used so far (user + system). */
export type CpuClock = () => Promise<number>;

/** This process's CPU clock. */
export const ownCpuSeconds: CpuClock = async () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

export interface Bounds {
  /** Stop after this many decisions... */
  decisions: number;
  /** ...or after this many seconds, whichever comes first. */
  seconds: number;
  /** Stops early when true (Ctrl-C). */
  stopped: () => boolean;
}

export interface CaseResult {
  concurrency: number;
  decisions: number;
  seconds: number;
  /** Acquire alone: the decision. */
  acquireMs: Float64Array;
  /** Acquire, then Release of the lease: what one request costs the quota service. */
  roundTripMs: Float64Array;
  /** Refusals by error type; a benchmark plan admits everything, so any refusal is a finding. */
  refused: Map<string, number>;
  /** Calls that threw (lost connection, timeout, ...). */
  failed: number;
  firstFailure: string | undefined;
  /** CPU milliseconds per decision (Acquire + Release) in this process: the caller's side. */
  callerCpuMs: number;
  /** The same in the quota process, when there is one. */
  serviceCpuMs: number | undefined;
}

/**
 * Runs Acquire then Release, `concurrency` loops at a time, over the accounts in turn, until the
 * bounds are reached. Each loop waits for its own Release before its next Acquire.
 */
export async function measure(
  target: DecisionTarget,
  accounts: readonly string[],
  concurrency: number,
  bounds: Bounds,
  serviceCpu?: CpuClock,
): Promise<CaseResult> {
  const acquireMs = new Float64Array(bounds.decisions);
  const roundTripMs = new Float64Array(bounds.decisions);
  const refused = new Map<string, number>();
  let failed = 0;
  let firstFailure: string | undefined;
  let next = 0;
  const [callerCpuBefore, serviceCpuBefore] = await Promise.all([ownCpuSeconds(), serviceCpu?.()]);
  const started = performance.now();
  const deadline = started + bounds.seconds * 1000;

  const loop = async () => {
    while (next < bounds.decisions && performance.now() < deadline && !bounds.stopped()) {
      const index = next;
      next += 1;
      const accountId = accounts[index % accounts.length]!;
      const begin = performance.now();
      try {
        const decision = await target.acquire(accountId, index);
        acquireMs[index] = performance.now() - begin;
        if ('refused' in decision) {
          refused.set(decision.refused, (refused.get(decision.refused) ?? 0) + 1);
        } else {
          await target.release(accountId, decision.leaseId);
        }
        roundTripMs[index] = performance.now() - begin;
      } catch (error) {
        failed += 1;
        firstFailure ??= (error as Error).message;
        acquireMs[index] = roundTripMs[index] = performance.now() - begin;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const seconds = (performance.now() - started) / 1000;
  const [callerCpuAfter, serviceCpuAfter] = await Promise.all([ownCpuSeconds(), serviceCpu?.()]);
  const perDecisionMs = (before: number, after: number) => ((after - before) * 1000) / Math.max(1, next);
  return {
    concurrency,
    decisions: next,
    seconds,
    acquireMs: acquireMs.subarray(0, next),
    roundTripMs: roundTripMs.subarray(0, next),
    refused,
    failed,
    firstFailure,
    callerCpuMs: perDecisionMs(callerCpuBefore, callerCpuAfter),
    serviceCpuMs:
      serviceCpuBefore === undefined || serviceCpuAfter === undefined
        ? undefined
        : perDecisionMs(serviceCpuBefore, serviceCpuAfter),
  };
}

/** Nearest-rank percentile (p in 0..100) of the samples. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

const columns = [
  ['case', 24],
  ['conc', 5],
  ['decisions', 10],
  ['seconds', 8],
  ['decisions/s', 12],
  ['acq p50', 9],
  ['acq p99', 9],
  ['acq p99.9', 10],
  ['a+r p50', 9],
  ['a+r p99', 9],
  ['a+r p99.9', 10],
  ['cpu caller', 11],
  ['cpu quota', 10],
  ['refused', 8],
  ['failed', 7],
] as const;

export function tableHeader(): string {
  return columns.map(([name, width], index) => (index === 0 ? name.padEnd(width) : name.padStart(width))).join(' ');
}

/** One table row; latencies in milliseconds. */
export function tableRow(name: string, result: CaseResult): string {
  const acquire = Float64Array.from(result.acquireMs).sort();
  const roundTrip = Float64Array.from(result.roundTripMs).sort();
  const ms = (value: number) => value.toFixed(3);
  const refused = [...result.refused.values()].reduce((sum, count) => sum + count, 0);
  const cells = [
    name,
    String(result.concurrency),
    String(result.decisions),
    result.seconds.toFixed(2),
    Math.round(result.decisions / result.seconds).toString(),
    ms(percentile(acquire, 50)),
    ms(percentile(acquire, 99)),
    ms(percentile(acquire, 99.9)),
    ms(percentile(roundTrip, 50)),
    ms(percentile(roundTrip, 99)),
    ms(percentile(roundTrip, 99.9)),
    ms(result.callerCpuMs),
    result.serviceCpuMs === undefined ? '-' : ms(result.serviceCpuMs),
    String(refused),
    String(result.failed),
  ];
  return cells
    .map((cell, index) => {
      const width = columns[index]![1];
      return index === 0 ? cell.padEnd(width) : cell.padStart(width);
    })
    .join(' ');
}
