import { jobFor } from './jobs';
import type { Target } from './jobs';
import type { LoadJob, LoadResult } from './load-protocol';
import { cpuMsOfTrees, residentBytes } from './proc';
import type { Settings } from './settings';
import { fixed, formatTable, megabytes, mergeResults, percentile } from './stats';

/**
 * The same mock upstream, in one run, four ways: direct, through a bare Node forwarder (the floor of any
 * gateway written in Node), through the peer gateway and through this gateway. Every figure for each, then
 * the ratios gateway ÷ peer and gateway ÷ floor: at concurrency 1 (upstream at once and at 20 ms), at fixed
 * offered rates (open loop), the highest rate held, the streamed time to first token, and CPU and memory of
 * the processes on each path.
 */

export const sides = ['direct', 'floor', 'peer', 'gateway'] as const;
export type Side = (typeof sides)[number];
type MeasuredSide = Exclude<Side, 'direct'>;
export const floorName = 'bare Node forwarder';

export interface Route extends Target {
  model: string;
}

export interface PeerComparisonContext {
  settings: Settings;
  peerName: string;
  runJob(job: LoadJob): Promise<LoadResult>;
  /** Each side's route to the upstream answering at once, and to the one answering after the throughput latency. */
  routes: { immediate: Record<Side, Route>; delayed: Record<Side, Route> };
  /** The processes whose CPU and memory make each side's cost (none for direct). */
  processes: Record<MeasuredSide, Map<string, number>>;
  /** Kafka, Redis and PostgreSQL where found: the gateway's, reported beside its own processes. */
  infrastructure: Map<string, number>;
  print(line?: string): void;
}

type Series = Record<Side, LoadResult>;

interface RateStep {
  rate: number;
  result: LoadResult;
  /** Requests the step should have sent. */
  offered: number;
  passed: boolean;
  cpuMs: Map<string, number>;
  peakResidentBytes: number;
}

export interface PeerComparison {
  immediate: Series;
  delayed: Series;
  streamed: Series;
  steps: Record<Side, RateStep[]>;
}

const latencies = (result: LoadResult) => result.latenciesMs;
const firstTokens = (result: LoadResult) => result.firstTokenMs;
const sumOf = (values: Iterable<number>) => [...values].reduce((sum, value) => sum + value, 0);
const bySide = <T>(make: (side: Side) => T) =>
  Object.fromEntries(sides.map((side) => [side, make(side)])) as Record<Side, T>;
const sideName = (context: PeerComparisonContext, side: Side) =>
  ({ direct: 'direct', floor: floorName, peer: context.peerName, gateway: 'this gateway' })[side];

/** Concurrency 1, the sides in alternating blocks so that noise from elsewhere hits all alike. */
async function seriesAtConcurrencyOne(
  context: PeerComparisonContext,
  routes: Record<Side, Route>,
  streamed: boolean,
): Promise<Series> {
  const { settings } = context;
  const job = (side: Side, requests: number) =>
    jobFor(routes[side], routes[side].model, streamed, { concurrency: 1, requests });
  // Warm-up errors are not fatal here: the peer may fail a kind of request, and that is a finding.
  for (const side of sides) await context.runJob(job(side, Math.max(1, Math.floor(settings.BENCH_PEER_REQUESTS / 10))));
  const deadline = Date.now() + settings.BENCH_LATENCY_SECONDS * 1_000;
  const results = bySide((): LoadResult[] => []);
  for (let done = 0; done < settings.BENCH_PEER_REQUESTS && Date.now() < deadline;) {
    const block = Math.min(settings.BENCH_BLOCK_REQUESTS, settings.BENCH_PEER_REQUESTS - done);
    for (const side of sides) results[side].push(await context.runJob(job(side, block)));
    done += block;
  }
  return bySide((side) => mergeResults(results[side]));
}

async function rateStep(context: PeerComparisonContext, side: Side, rate: number): Promise<RateStep> {
  const { settings } = context;
  const route = context.routes.delayed[side];
  const durationMs = settings.BENCH_PEER_RATE_SECONDS * 1_000;
  const roots = side === 'direct' ? new Map<string, number>() : context.processes[side];
  const measured = side === 'gateway' ? new Map([...roots, ...context.infrastructure]) : roots;
  let peakResidentBytes = 0;
  const sampleResident = () => {
    peakResidentBytes = Math.max(peakResidentBytes, sumOf([...roots.values()].map(residentBytes)));
  };
  const cpuBefore = cpuMsOfTrees(measured);
  const sampler = setInterval(sampleResident, 250);
  let result: LoadResult;
  try {
    result = await context.runJob({
      ...jobFor(route, route.model, false, { concurrency: 1, durationMs, ratePerSecond: rate }),
      timeoutMs: 10_000,
    });
  } finally {
    clearInterval(sampler);
  }
  sampleResident();
  const cpuAfter = cpuMsOfTrees(measured);
  const offered = Math.floor((durationMs * rate) / 1_000);
  return {
    rate,
    result,
    offered,
    passed:
      result.errors === 0 &&
      result.requests === offered &&
      percentile(result.latenciesMs, 99) < settings.BENCH_P99_LIMIT_MS,
    cpuMs: new Map([...cpuAfter].map(([name, ms]) => [name, ms - (cpuBefore.get(name) ?? 0)])),
    peakResidentBytes,
  };
}

/** Every fixed rate on every side; the ramp's rates on a side only while it has held every rate below. */
async function offeredRates(context: PeerComparisonContext): Promise<Record<Side, RateStep[]>> {
  const { settings } = context;
  const fixedRates = new Set(settings.BENCH_PEER_RATES);
  const rates = [...new Set([...settings.BENCH_PEER_RATES, ...settings.BENCH_PEER_RAMP])].sort((a, b) => a - b);
  const steps = bySide((): RateStep[] => []);
  for (const side of sides) {
    const route = context.routes.delayed[side];
    await context.runJob(
      jobFor(route, route.model, false, { concurrency: 1, durationMs: 1_000, ratePerSecond: rates[0]! }),
    );
  }
  for (const rate of rates) {
    for (const side of sides) {
      const held = steps[side].every((step) => step.passed);
      if (fixedRates.has(rate) || held) steps[side].push(await rateStep(context, side, rate));
    }
  }
  return steps;
}

export async function comparePeer(context: PeerComparisonContext): Promise<PeerComparison> {
  const { settings, print } = context;
  print();
  print(
    `peer comparison: the same mock upstream direct, through a ${floorName}, through ${context.peerName} and ` +
      `through this gateway ` +
      `(${settings.BENCH_PEER_REQUESTS} requests per side at concurrency 1, in alternating blocks)`,
  );
  const immediate = await seriesAtConcurrencyOne(context, context.routes.immediate, false);
  printSeries(
    context,
    `whole answers, concurrency 1, upstream at ${settings.BENCH_UPSTREAM_LATENCY_MS} ms`,
    immediate,
    latencies,
  );
  const delayed = await seriesAtConcurrencyOne(context, context.routes.delayed, false);
  printSeries(
    context,
    `whole answers, concurrency 1, upstream at ${settings.BENCH_THROUGHPUT_UPSTREAM_LATENCY_MS} ms`,
    delayed,
    latencies,
  );
  const streamed = await seriesAtConcurrencyOne(context, context.routes.immediate, true);
  printSeries(context, 'streamed, time to first token, concurrency 1', streamed, firstTokens);
  print();
  print(
    `offered rates (open loop, ${settings.BENCH_PEER_RATE_SECONDS} s each, upstream at ` +
      `${settings.BENCH_THROUGHPUT_UPSTREAM_LATENCY_MS} ms; latency from each request's scheduled time; ` +
      `held: p99 < ${settings.BENCH_P99_LIMIT_MS} ms, no error, every request sent)`,
  );
  const steps = await offeredRates(context);
  printSteps(context, steps);
  const comparison = { immediate, delayed, streamed, steps };
  printPeerSummary(context, comparison);
  return comparison;
}

function printSeries(
  context: PeerComparisonContext,
  title: string,
  series: Series,
  values: (result: LoadResult) => number[],
): void {
  const at = (side: Side, p: number) => percentile(values(series[side]), p);
  const added = (side: Side, p: number) => at(side, p) - at('direct', p);
  context.print();
  context.print(`  ${title}, ms (nearest rank)`);
  formatTable(
    ['', 'requests', 'errors', 'p50', 'p99', 'max', 'added p50', 'added p99'],
    sides.map((side) => [
      sideName(context, side),
      String(series[side].requests),
      String(series[side].errors),
      fixed(at(side, 50), 3),
      fixed(at(side, 99), 3),
      fixed(at(side, 100), 3),
      side === 'direct' ? '' : fixed(added(side, 50), 3),
      side === 'direct' ? '' : fixed(added(side, 99), 3),
    ]),
  ).forEach((line) => context.print(`    ${line}`));
  for (const side of sides) {
    if (series[side].firstError) context.print(`    first error (${side}): ${series[side].firstError}`);
  }
}

function printSteps(context: PeerComparisonContext, steps: Record<Side, RateStep[]>): void {
  const rows = sides.flatMap((side) =>
    steps[side].map((step) => {
      const cpu = side === 'direct' ? Number.NaN : sumOf(ownCpu(context, side, step).values());
      return [
        sideName(context, side),
        String(step.rate),
        `${step.result.requests}/${step.offered}`,
        fixed(percentile(step.result.latenciesMs, 50), 1),
        fixed(percentile(step.result.latenciesMs, 99), 1),
        String(step.result.errors),
        fixed(cpu / step.result.requests, 3),
        side === 'direct' ? '' : megabytes(step.peakResidentBytes),
        step.passed ? 'held' : 'NOT HELD',
      ];
    }),
  );
  formatTable(
    ['', 'req/s offered', 'answered', 'p50 ms', 'p99 ms', 'errors', 'CPU ms/req', 'RSS MB', ''],
    rows,
  ).forEach((line) => context.print(`  ${line}`));
  for (const side of sides) {
    for (const step of steps[side]) {
      if (step.result.firstError)
        context.print(`  first error (${side}, ${step.rate} req/s): ${step.result.firstError}`);
    }
  }
  context.print(
    "  CPU and RSS: the forwarder's and the peer's one process each; this gateway's six (Kafka, Redis, PostgreSQL in the summary).",
  );
}

/** The side's own processes' CPU in a step (the gateway's six, not its infrastructure). */
function ownCpu(context: PeerComparisonContext, side: MeasuredSide, step: RateStep): Map<string, number> {
  return new Map([...step.cpuMs].filter(([name]) => context.processes[side].has(name)));
}

const pair = (first: number, second: number, digits = 2) => `${fixed(first, digits)} / ${fixed(second, digits)}`;
const ratio = (gateway: number, other: number) =>
  other > 0 && Number.isFinite(gateway) ? gateway / other : Number.NaN;
/** The ratio columns: this gateway ÷ the peer, and this gateway ÷ the floor. */
const comparedTo = ['peer', 'floor'] as const;

function printPeerSummary(context: PeerComparisonContext, comparison: PeerComparison): void {
  const { settings } = context;
  const rows: string[][] = [];
  const latencyRows = (
    label: string,
    series: Series,
    values: (result: LoadResult) => number[],
    withTotals: boolean,
  ) => {
    const at = (side: Side, p: number) => percentile(values(series[side]), p);
    const added = (side: Side, p: number) => at(side, p) - at('direct', p);
    const failed = (side: Side) => series[side].errors > 0 && series[side].errors >= series[side].requests;
    const cell = (side: Side, figure: (side: Side, p: number) => number) =>
      failed(side)
        ? `fails (${series[side].errors} of ${series[side].requests} failed)`
        : pair(figure(side, 50), figure(side, 99));
    const ratios = (figure: (side: Side, p: number) => number) =>
      comparedTo.map((other) =>
        failed(other)
          ? ''
          : pair(ratio(figure('gateway', 50), figure(other, 50)), ratio(figure('gateway', 99), figure(other, 99))),
      );
    if (withTotals) {
      rows.push([`${label}: p50 / p99 ms`, ...sides.map((side) => cell(side, at)), ...ratios(at)]);
    }
    rows.push([
      `${label}, added: p50 / p99 ms`,
      '—',
      ...sides.filter((side) => side !== 'direct').map((side) => cell(side, added)),
      ...ratios(added),
    ]);
  };
  latencyRows(
    `concurrency 1, upstream at ${settings.BENCH_UPSTREAM_LATENCY_MS} ms`,
    comparison.immediate,
    latencies,
    true,
  );
  latencyRows(
    `concurrency 1, upstream at ${settings.BENCH_THROUGHPUT_UPSTREAM_LATENCY_MS} ms`,
    comparison.delayed,
    latencies,
    true,
  );
  for (const rate of settings.BENCH_PEER_RATES) {
    const step = (side: Side) => comparison.steps[side].find((candidate) => candidate.rate === rate);
    const cell = (side: Side) => {
      const found = step(side);
      if (!found) return 'n/a';
      const errors = found.result.errors + (found.offered - found.result.requests);
      return `${pair(percentile(found.result.latenciesMs, 50), percentile(found.result.latenciesMs, 99), 1)}${errors > 0 ? ` (${errors} errors)` : ''}`;
    };
    const p = (side: Side, q: number) => percentile(step(side)?.result.latenciesMs ?? [], q);
    rows.push([
      `${rate} req/s offered: p50 / p99 ms`,
      ...sides.map(cell),
      ...comparedTo.map((other) => pair(ratio(p('gateway', 50), p(other, 50)), ratio(p('gateway', 99), p(other, 99)))),
    ]);
  }
  const held = (side: Side) => {
    const steps = comparison.steps[side];
    const passing = steps.filter((step) => step.passed).map((step) => step.rate);
    const best = passing.length > 0 ? Math.max(...passing) : 0;
    const allPassed = steps.length > 0 && steps.every((step) => step.passed);
    return { best, text: best === 0 ? 'none' : `${allPassed ? '≥ ' : ''}${best.toLocaleString('en-GB')}` };
  };
  rows.push([
    'highest rate held, req/s',
    ...sides.map((side) => held(side).text),
    ...comparedTo.map((other) => fixed(ratio(held('gateway').best, held(other).best), 2)),
  ]);
  latencyRows('streamed time to first token', comparison.streamed, firstTokens, false);
  rows.push(...costRows(context, comparison));
  context.print();
  context.print(
    `peer summary (${context.peerName} and a ${floorName}; ratios: this gateway ÷ the peer and ÷ the forwarder, ` +
      'first figure / second figure)',
  );
  formatTable(
    ['figure', ...sides.map((side) => sideName(context, side)), 'gateway ÷ peer', 'gateway ÷ forwarder'],
    rows,
  ).forEach((line) => context.print(`  ${line}`));
}

function costRows(context: PeerComparisonContext, comparison: PeerComparison): string[][] {
  const rate = context.settings.BENCH_PEER_CPU_RATE;
  const atRate = (side: MeasuredSide) => comparison.steps[side].find((step) => step.rate === rate);
  const cpuPerRequest = (side: MeasuredSide) => {
    const step = atRate(side);
    return step ? sumOf(ownCpu(context, side, step).values()) / step.result.requests : Number.NaN;
  };
  const gatewayStep = atRate('gateway');
  const infrastructure = gatewayStep
    ? [...context.infrastructure.keys()]
        .map((name) => `${name} ${fixed((gatewayStep.cpuMs.get(name) ?? 0) / gatewayStep.result.requests, 2)}`)
        .join(', ')
    : '';
  const peakResident = (side: MeasuredSide) =>
    Math.max(0, ...comparison.steps[side].map((step) => step.peakResidentBytes)) / (1024 * 1024);
  return [
    [
      `CPU per request at ${rate} req/s offered, ms`,
      '—',
      `${fixed(cpuPerRequest('floor'), 2)} (one process)`,
      `${fixed(cpuPerRequest('peer'), 2)} (one process)`,
      `${fixed(cpuPerRequest('gateway'), 2)} (six processes${infrastructure ? `; plus ${infrastructure}` : ''})`,
      ...comparedTo.map((other) => fixed(ratio(cpuPerRequest('gateway'), cpuPerRequest(other)), 2)),
    ],
    [
      'resident memory, highest during the rate steps, MB',
      '—',
      fixed(peakResident('floor'), 0),
      fixed(peakResident('peer'), 0),
      `${fixed(peakResident('gateway'), 0)} (six processes)`,
      ...comparedTo.map((other) => fixed(ratio(peakResident('gateway'), peakResident(other)), 2)),
    ],
  ];
}
