import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { runOrExit } from '@gw/config';
import { repoRoot } from '@gw/local-stack';
import { startBareForwarderProcess, startLoadGenerator, startMockUpstreamProcess } from './children';
import type { LoadGenerator } from './children';
import { Cleanup } from './cleanup';
import { summariseProfiles } from './cpu-profile';
import { benchModels, gatewayServices, resolveInfra, startGatewayStack } from './gateway-stack';
import type { GatewayService, GatewayStack } from './gateway-stack';
import { callsBetween, grpcCallsHandled } from './grpc-calls';
import { startOtlpSink } from './otlp-sink';
import type { LoadJob, LoadResult } from './load-protocol';
import { cpuMsOfTrees, pidListeningOn, processAgeMs, proportionalBytes, residentBytes } from './proc';
import { readSettings } from './settings';
import type { Settings } from './settings';
import { fixed, formatTable, megabytes, mergeResults, percentile } from './stats';
import { jobFor } from './jobs';
import { comparePeer, floorName } from './peer-comparison';
import type { Route, Side } from './peer-comparison';
import { peerPackage, peerVersion, startPeerGateway } from './peer-gateway';
import type { Target } from './jobs';

/**
 * The whole gateway on loopback: what it adds to a request's latency and to a stream's first token
 * (against a direct call to the same mock upstream), the rate it sustains, and the CPU and memory of
 * its six processes at that rate. Not a test: `make bench-gateway` runs it; it prints targets next to
 * the figures and fails only when requests fail in the latency series.
 */

const print = (line = '') => process.stdout.write(`${line}\n`);

const targets = {
  addedP50Ms: 1,
  addedP99Ms: 3,
  addedFirstTokenP99Ms: 3,
  requestsPerSecond: 1_500,
  cpuMsPerRequest: 0.8,
  residentMegabytes: 600,
};

/** Two sides measured in alternating blocks: the baseline (`direct`) and the side it is compared with. */
interface LatencyComparison {
  direct: LoadResult;
  gateway: LoadResult;
}

/** Where one side of a latency comparison sends its requests, and for which model. */
interface LatencySide {
  target: Target;
  model: string;
}

interface ThroughputStep {
  concurrency: number;
  result: LoadResult;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  passed: boolean;
  /** CPU milliseconds during the step, by process (tree). */
  cpuMs: Map<string, number>;
  /** The highest sum of the six services' RSS seen during the step, and each one's RSS and PSS then. */
  peakResident: {
    totalBytes: number;
    byService: Map<GatewayService, number>;
    proportionalBytes: number;
    proportionalByService: Map<GatewayService, number>;
  };
  grpcCalls: [string, number][];
}

function commitDescription(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim();
    const changed = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd: repoRoot,
      encoding: 'utf8',
    }).trim();
    return changed === '' ? commit : `${commit} (+ uncommitted changes)`;
  } catch {
    return 'unknown commit';
  }
}

/** Over 1, 5 and 15 minutes: how much else wanted the CPUs. */
const loadAverage = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

const gatewayCpuMs = (cpuMs: Map<string, number>) =>
  gatewayServices.reduce((sum, name) => sum + (cpuMs.get(name) ?? 0), 0);

class Run {
  private load!: LoadGenerator;
  private stack!: GatewayStack;
  private direct!: Target;
  private gateway!: Target;
  private readonly stopping = new AbortController();
  /** The run's temporary directory, once made. */
  private root: string | undefined;

  constructor(
    private readonly settings: Settings,
    private readonly cleanup: Cleanup,
  ) {}

  /** Ctrl-C or the time limit: the job in flight fails at once (its load generator goes), nothing new starts. */
  stop(reason: string): void {
    if (this.stopping.signal.aborted) return;
    this.stopping.abort(reason);
    process.stderr.write(`${reason}: stopping, then cleaning up\n`);
    void this.load?.stop();
  }

  get stopReason(): string | undefined {
    return this.stopping.signal.aborted ? String(this.stopping.signal.reason) : undefined;
  }

  /** After a failure, the end of each service's log: the directory goes with the cleanup. */
  async printLogTails(lines = 15): Promise<void> {
    if (this.root === undefined) return;
    const logs = join(this.root, 'logs');
    const files = await readdir(logs).catch(() => []);
    for (const file of files) {
      const tail = (await readFile(join(logs, file), 'utf8')).trimEnd().split('\n').slice(-lines);
      process.stderr.write(`--- ${file} (last ${tail.length} lines)\n${tail.join('\n')}\n`);
    }
  }

  private async runJob(job: LoadJob): Promise<LoadResult> {
    if (this.stopping.signal.aborted) throw new Error(String(this.stopping.signal.reason));
    return this.load.run(job);
  }

  /** The concurrency-1 series: (a) whole answers, (b) streamed, (b2) a Bedrock pool against an Anthropic pool. */
  private async latencySeries() {
    const whole = await this.compareLatency(false);
    this.printLatency('(a) added latency, whole answers, concurrency 1', whole, (result) => result.latenciesMs);
    const streamed = await this.compareLatency(true);
    this.printLatency(
      '(b) added time to first token, streamed, concurrency 1',
      streamed,
      (result) => result.firstTokenMs,
    );
    // The same upstream, its answer framed as Bedrock's event stream, through a Bedrock pool (SigV4 signing,
    // the event-stream relay) against through the Anthropic pool, in alternating blocks: what the
    // provider's protocol adds, whatever else the machine is doing.
    const bedrock = await this.compareLatency(true, {
      direct: { target: this.gateway, model: benchModels.latency },
      gateway: { target: this.gateway, model: benchModels.bedrock },
    });
    this.printLatency(
      '(b2) time to first token through a Bedrock pool against an Anthropic pool, streamed, concurrency 1',
      bedrock,
      (result) => result.firstTokenMs,
      ['through an Anthropic pool', 'through a Bedrock pool', 'added by Bedrock'],
    );
    return { whole, streamed, bedrock };
  }

  async execute(): Promise<number> {
    const { settings, cleanup } = this;
    const profiling = settings.BENCH_PROFILE === '1';
    const root = await mkdtemp(join(tmpdir(), 'gw-bench-gateway-'));
    this.root = root;
    cleanup.add('remove the temporary directory', () => rm(root, { recursive: true, force: true }));
    const profileDir = profiling ? (settings.BENCH_PROFILE_DIR ?? join(root, 'profiles')) : undefined;

    print(
      `gateway benchmark: ${commitDescription()}, ${new Date().toISOString()}, node ${process.version}, ` +
        `${cpus().length} CPUs, load average ${loadAverage()}`,
    );
    if (profiling) print(`profiling every service (--cpu-prof into ${profileDir}): figures are slower than usual`);

    const infra = await resolveInfra(repoRoot, cleanup);
    const ports = { latency: settings.BENCH_PORT_BASE + 31, throughput: settings.BENCH_PORT_BASE + 32 };
    const mock = await startMockUpstreamProcess([
      { port: ports.latency, latencyMs: settings.BENCH_UPSTREAM_LATENCY_MS },
      { port: ports.throughput, latencyMs: settings.BENCH_THROUGHPUT_UPSTREAM_LATENCY_MS },
    ]);
    cleanup.add('stop the mock upstream', () => mock.stop());
    const [latencyUrl, throughputUrl] = mock.urls as [string, string];
    if (settings.BENCH_TRACING === 'compare') {
      return this.compareTracing(root, infra, { latency: latencyUrl, throughput: throughputUrl }, mock.pid);
    }

    this.stack = await startGatewayStack(
      {
        repoRoot,
        root,
        portBase: settings.BENCH_PORT_BASE,
        infra,
        logLevel: settings.BENCH_LOG_LEVEL,
        upstreamUrls: { latency: latencyUrl, throughput: throughputUrl },
        grpcTls: settings.BENCH_GRPC_TLS === '1',
        profileDir,
      },
      cleanup,
    );
    this.load = await startLoadGenerator();
    cleanup.add('stop the load generator', () => this.load.stop());
    print(
      `stack up on 127.0.0.1:${this.stack.ports.http} (logs ${this.stack.logsDir}), gRPC between the services ` +
        `${settings.BENCH_GRPC_TLS === '1' ? 'over mutual TLS' : 'in plaintext'}; mock upstream at ` +
        `${settings.BENCH_UPSTREAM_LATENCY_MS} ms (latency cases) and ` +
        `${settings.BENCH_THROUGHPUT_UPSTREAM_LATENCY_MS} ms (throughput case)`,
    );

    this.gateway = {
      url: `${this.stack.baseUrl}/v1/messages`,
      headers: { 'x-api-key': this.stack.liveKey },
    };
    this.direct = { url: `${latencyUrl}/v1/messages`, headers: {} };

    await this.waitUntilServing();
    // Profiles are read from here on: what came before is start-up.
    const ageAtFirstRequest = new Map([...this.stack.pids].map(([name, pid]) => [name, processAgeMs(pid) ?? 0]));
    const upstreamUrls = { latency: latencyUrl, throughput: throughputUrl };
    if (settings.BENCH_PEER === 'only') {
      const failed = await this.comparePeer(upstreamUrls, this.processRoots(infra.ports, mock.pid));
      print(`load average at the end: ${loadAverage()}`);
      return failed ? 1 : 0;
    }
    const { whole, streamed, bedrock } = await this.latencySeries();

    const roots = this.processRoots(infra.ports, mock.pid);
    const steps = await this.rampThroughput(roots, throughputUrl);
    const best = steps.filter((step) => step.passed).sort((a, b) => b.requestsPerSecond - a.requestsPerSecond)[0];
    if (best) this.printBreakdown(best, roots);

    this.printSummary(whole, streamed, best);
    const peerFailed = settings.BENCH_PEER === 'on' && (await this.comparePeer(upstreamUrls, roots));
    print(`load average at the end: ${loadAverage()}`);

    if (profileDir) {
      // Each service writes its profile as it exits.
      await this.stack.stopServices();
      await this.printProfiles(profileDir, ageAtFirstRequest);
    }
    const failed =
      peerFailed || [whole, streamed, bedrock].some((series) => series.direct.errors > 0 || series.gateway.errors > 0);
    if (failed) process.stderr.write('some requests of the latency series failed: see the first errors above\n');
    return failed ? 1 : 0;
  }

  /**
   * Starts the peer gateway and the bare forwarder, measures direct, the forwarder, the peer and this
   * gateway side by side, stops the two.
   * True when requests direct or through this gateway failed at concurrency 1 (the peer's failures are findings).
   */
  private async comparePeer(
    upstreamUrls: { latency: string; throughput: string },
    roots: Map<string, number>,
  ): Promise<boolean> {
    const peer = await startPeerGateway(
      this.settings.BENCH_PORT_BASE + 35,
      join(this.stack.logsDir, `${peerPackage.replace('/', '_')}.log`),
    );
    this.cleanup.add(`stop ${peerPackage}`, () => peer.stop());
    const forwarder = await startBareForwarderProcess(this.settings.BENCH_PORT_BASE + 37);
    this.cleanup.add('stop the bare forwarder', () => forwarder.stop());
    const peerName = `Portkey ${peerVersion()}`;
    print();
    print(`${peerName} (${peerPackage}) up on ${peer.baseUrl}, pid ${peer.pid}`);
    print(`the ${floorName} up on ${forwarder.baseUrl}, pid ${forwarder.pid}`);
    const routesTo = (upstreamUrl: string, model: string): Record<Side, Route> => ({
      direct: { url: `${upstreamUrl}/v1/messages`, headers: {}, model },
      floor: { url: `${forwarder.baseUrl}/v1/messages`, headers: forwarder.headersFor(upstreamUrl), model },
      peer: { url: `${peer.baseUrl}/v1/messages`, headers: peer.headersFor(upstreamUrl), model },
      gateway: { ...this.gateway, model },
    });
    const comparison = await comparePeer({
      settings: this.settings,
      peerName,
      runJob: (job) => this.runJob(job),
      routes: {
        immediate: routesTo(upstreamUrls.latency, benchModels.latency),
        delayed: routesTo(upstreamUrls.throughput, benchModels.throughput),
      },
      processes: {
        floor: new Map([[floorName, forwarder.pid]]),
        peer: new Map([[peerName, peer.pid]]),
        gateway: new Map(this.stack.pids),
      },
      infrastructure: new Map([...roots].filter(([name]) => ['kafka', 'redis', 'postgres'].includes(name))),
      print,
    });
    await peer.stop();
    await forwarder.stop();
    const { immediate, delayed, streamed } = comparison;
    return [immediate, delayed, streamed].some((series) => series.direct.errors > 0 || series.gateway.errors > 0);
  }

  /**
   * Tracing off, then on (every request sampled, spans exported to a receiver in this process): each on
   * a stack of its own, the same latency series and one throughput step, printed side by side.
   */
  private async compareTracing(
    root: string,
    infra: Awaited<ReturnType<typeof resolveInfra>>,
    upstreamUrls: { latency: string; throughput: string },
    mockPid: number,
  ): Promise<number> {
    const { settings, cleanup } = this;
    const sink = await startOtlpSink(settings.BENCH_PORT_BASE + 41);
    cleanup.add('stop the OTLP receiver', () => sink.close());
    this.load = await startLoadGenerator();
    cleanup.add('stop the load generator', () => this.load.stop());
    this.direct = { url: `${upstreamUrls.latency}/v1/messages`, headers: {} };
    const modes = [
      { name: 'tracing off', tracingEnv: undefined },
      {
        name: 'tracing on',
        tracingEnv: {
          OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
          OTEL_TRACES_SAMPLER: settings.BENCH_TRACING_SAMPLER,
        },
      },
    ];
    const results: { whole: LatencyComparison; streamed: LatencyComparison; step: ThroughputStep }[] = [];
    for (const mode of modes) {
      const modeRoot = join(root, mode.name.replace(' ', '-'));
      await mkdir(modeRoot, { recursive: true });
      this.stack = await startGatewayStack(
        {
          repoRoot,
          root: modeRoot,
          portBase: settings.BENCH_PORT_BASE,
          infra,
          logLevel: settings.BENCH_LOG_LEVEL,
          upstreamUrls,
          grpcTls: settings.BENCH_GRPC_TLS === '1',
          tracingEnv: mode.tracingEnv,
        },
        cleanup,
      );
      this.gateway = { url: `${this.stack.baseUrl}/v1/messages`, headers: { 'x-api-key': this.stack.liveKey } };
      print(`\n${mode.name}: stack up on 127.0.0.1:${this.stack.ports.http}`);
      await this.waitUntilServing();
      const whole = await this.compareLatency(false);
      this.printLatency(`${mode.name}: (a) added latency, whole answers`, whole, (result) => result.latenciesMs);
      const streamed = await this.compareLatency(true);
      this.printLatency(`${mode.name}: (b) added time to first token`, streamed, (result) => result.firstTokenMs);
      const roots = this.processRoots(infra.ports, mockPid);
      const job = (seconds: number) =>
        jobFor(this.gateway, benchModels.throughput, false, {
          concurrency: settings.BENCH_TRACING_CONCURRENCY,
          durationMs: seconds * 1_000,
        });
      await this.runJob(job(2));
      const step = await this.throughputStep(roots, job(settings.BENCH_STEP_SECONDS));
      results.push({ whole, streamed, step });
      await this.stack.stopServices();
    }

    const added = (comparison: LatencyComparison, values: (result: LoadResult) => number[], p: number) =>
      percentile(values(comparison.gateway), p) - percentile(values(comparison.direct), p);
    const latencies = (result: LoadResult) => result.latenciesMs;
    const firstTokens = (result: LoadResult) => result.firstTokenMs;
    const figures: [string, (run: (typeof results)[number]) => number, number][] = [
      ['added latency p50, whole answer (ms)', (run) => added(run.whole, latencies, 50), 3],
      ['added latency p99, whole answer (ms)', (run) => added(run.whole, latencies, 99), 3],
      ['added time to first token p50 (ms)', (run) => added(run.streamed, firstTokens, 50), 3],
      ['added time to first token p99 (ms)', (run) => added(run.streamed, firstTokens, 99), 3],
      [`rate at concurrency ${settings.BENCH_TRACING_CONCURRENCY} (req/s)`, (run) => run.step.requestsPerSecond, 0],
      ['p99 at that rate (ms)', (run) => run.step.p99Ms, 1],
      ['CPU per request, six processes (ms)', (run) => gatewayCpuMs(run.step.cpuMs) / run.step.result.requests, 3],
    ];
    const [off, on] = results as [(typeof results)[number], (typeof results)[number]];
    print();
    print(
      `tracing off and on (${settings.BENCH_TRACING_SAMPLER} sampler, OTLP/HTTP protobuf to a receiver in this process)`,
    );
    formatTable(
      ['figure', 'off', 'on', 'difference'],
      figures.map(([name, value, digits]) => [
        name,
        fixed(value(off), digits),
        fixed(value(on), digits),
        `${value(on) - value(off) >= 0 ? '+' : ''}${fixed(value(on) - value(off), digits)}`,
      ]),
    ).forEach((line) => print(`  ${line}`));
    const exported = sink.received();
    print(
      `  spans exported while tracing: ${exported.requests} OTLP requests, ${fixed(exported.bytes / (1024 * 1024), 1)} MB`,
    );
    print(`load average at the end: ${loadAverage()}`);
    const failed = results.some((run) =>
      [run.whole.direct, run.whole.gateway, run.streamed.direct, run.streamed.gateway].some((r) => r.errors > 0),
    );
    if (failed) process.stderr.write('some requests of the latency series failed: see the first errors above\n');
    return failed ? 1 : 0;
  }

  /**
   * Healthy is not yet serving: ingress, for one, answers 503 until policy's catalogue has reached it.
   * One request at a time until one is answered 200, for up to 30 s.
   */
  private async waitUntilServing(): Promise<void> {
    const job = jobFor(this.gateway, benchModels.latency, false, { concurrency: 1, requests: 1 });
    const deadline = Date.now() + 30_000;
    for (;;) {
      const result = await this.runJob(job);
      if (result.errors === 0) return;
      if (Date.now() > deadline) throw new Error(`the gateway does not serve after 30 s: ${result.firstError}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /**
   * Warm-up, then the two sides in alternating blocks, so that noise from elsewhere hits both alike;
   * stops early, after whole blocks, when the time budget is spent. By default the upstream direct
   * against the gateway, on the latency listener.
   */
  private async compareLatency(
    streamed: boolean,
    sides: { direct: LatencySide; gateway: LatencySide } = {
      direct: { target: this.direct, model: benchModels.latency },
      gateway: { target: this.gateway, model: benchModels.latency },
    },
  ): Promise<LatencyComparison> {
    const { settings } = this;
    const jobs = (requests: number) => ({
      direct: jobFor(sides.direct.target, sides.direct.model, streamed, { concurrency: 1, requests }),
      gateway: jobFor(sides.gateway.target, sides.gateway.model, streamed, { concurrency: 1, requests }),
    });
    const warmUp = jobs(settings.BENCH_WARMUP_REQUESTS);
    for (const result of [await this.runJob(warmUp.direct), await this.runJob(warmUp.gateway)]) {
      if (result.errors > 0) throw new Error(`the warm-up failed: ${result.firstError}`);
    }
    const deadline = Date.now() + settings.BENCH_LATENCY_SECONDS * 1_000;
    const direct: LoadResult[] = [];
    const gateway: LoadResult[] = [];
    for (let done = 0; done < settings.BENCH_LATENCY_REQUESTS && Date.now() < deadline;) {
      const block = jobs(Math.min(settings.BENCH_BLOCK_REQUESTS, settings.BENCH_LATENCY_REQUESTS - done));
      direct.push(await this.runJob(block.direct));
      gateway.push(await this.runJob(block.gateway));
      done += block.gateway.requests!;
    }
    return { direct: mergeResults(direct), gateway: mergeResults(gateway) };
  }

  private printLatency(
    title: string,
    comparison: LatencyComparison,
    values: (result: LoadResult) => number[],
    labels = ['direct to the upstream', 'through the gateway', 'added by the gateway'],
  ): void {
    print();
    print(`${title}: ${comparison.gateway.requests} requests each, ms (nearest rank)`);
    const row = (name: string, result: LoadResult) => [
      name,
      String(result.requests),
      String(result.errors),
      fixed(percentile(values(result), 50), 3),
      fixed(percentile(values(result), 90), 3),
      fixed(percentile(values(result), 99), 3),
      fixed(Math.max(...values(result)), 3),
    ];
    const added = (p: number) =>
      fixed(percentile(values(comparison.gateway), p) - percentile(values(comparison.direct), p), 3);
    const lines = formatTable(
      ['', 'requests', 'errors', 'p50', 'p90', 'p99', 'max'],
      [
        row(labels[0]!, comparison.direct),
        row(labels[1]!, comparison.gateway),
        [labels[2]!, '', '', added(50), added(90), added(99), ''],
      ],
    );
    lines.forEach((line) => print(`  ${line}`));
    for (const [name, result] of Object.entries(comparison)) {
      if (result.firstError) print(`  first error (${name}): ${result.firstError}`);
    }
  }

  /** The processes whose CPU is read: the six services, the infrastructure servers found, and the helpers. */
  private processRoots(
    infraPorts: Record<'postgres' | 'redis' | 'kafka', number>,
    mockPid: number,
  ): Map<string, number> {
    const roots = new Map<string, number>(this.stack.pids);
    for (const [name, port] of Object.entries(infraPorts)) {
      const pid = pidListeningOn(port);
      if (pid !== undefined) roots.set(name, pid);
    }
    roots.set('mock upstream', mockPid);
    roots.set('load generator', this.load.pid);
    return roots;
  }

  /** Closed-loop steps of rising concurrency against the throughput model, until one fails. */
  private async rampThroughput(roots: Map<string, number>, throughputUrl: string): Promise<ThroughputStep[]> {
    const { settings } = this;
    print();
    print(
      `(c) sustained rate through the gateway, whole answers, upstream at ${settings.BENCH_THROUGHPUT_UPSTREAM_LATENCY_MS} ms (${throughputUrl}), ` +
        `${settings.BENCH_STEP_SECONDS} s per step; passes with p99 < ${settings.BENCH_P99_LIMIT_MS} ms and no error`,
    );
    const job = (concurrency: number, seconds: number) =>
      jobFor(this.gateway, benchModels.throughput, false, { concurrency, durationMs: seconds * 1_000 });
    // The throughput pool's connections and code paths are cold until now.
    await this.runJob(job(settings.BENCH_STEPS[0]!, 2));

    const header = ['concurrency', 'requests', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'CPU ms/req', 'RSS MB', ''];
    const rows: string[][] = [];
    const steps: ThroughputStep[] = [];
    for (const concurrency of settings.BENCH_STEPS) {
      const step = await this.throughputStep(roots, job(concurrency, settings.BENCH_STEP_SECONDS));
      steps.push(step);
      rows.push([
        String(concurrency),
        String(step.result.requests),
        fixed(step.requestsPerSecond, 0),
        fixed(step.p50Ms, 1),
        fixed(step.p99Ms, 1),
        String(step.result.errors),
        fixed(gatewayCpuMs(step.cpuMs) / step.result.requests, 3),
        megabytes(step.peakResident.totalBytes),
        step.passed ? 'pass' : 'FAIL',
      ]);
      if (!step.passed) break;
    }
    formatTable(header, rows).forEach((line) => print(`  ${line}`));
    for (const step of steps) {
      if (step.result.firstError) print(`  first error at concurrency ${step.concurrency}: ${step.result.firstError}`);
    }
    return steps;
  }

  private async throughputStep(roots: Map<string, number>, job: LoadJob): Promise<ThroughputStep> {
    const grpcBefore = await grpcCallsHandled(this.stack.metricsUrls);
    const cpuBefore = cpuMsOfTrees(roots);
    const peakResident: ThroughputStep['peakResident'] = {
      totalBytes: 0,
      byService: new Map(),
      proportionalBytes: 0,
      proportionalByService: new Map(),
    };
    const sampleResident = () => {
      const byService = new Map(gatewayServices.map((name) => [name, residentBytes(this.stack.pids.get(name)!)]));
      const totalBytes = [...byService.values()].reduce((sum, bytes) => sum + bytes, 0);
      if (totalBytes <= peakResident.totalBytes) return;
      const proportionalByService = new Map(
        gatewayServices.map((name) => [name, proportionalBytes(this.stack.pids.get(name)!)]),
      );
      const proportional = [...proportionalByService.values()].reduce((sum, bytes) => sum + bytes, 0);
      Object.assign(peakResident, { totalBytes, byService, proportionalBytes: proportional, proportionalByService });
    };
    const sampler = setInterval(sampleResident, 250);
    let result: LoadResult;
    try {
      result = await this.runJob(job);
    } finally {
      clearInterval(sampler);
    }
    sampleResident();
    const cpuAfter = cpuMsOfTrees(roots);
    const grpcAfter = await grpcCallsHandled(this.stack.metricsUrls);
    const p99Ms = percentile(result.latenciesMs, 99);
    return {
      concurrency: job.concurrency,
      result,
      requestsPerSecond: (result.requests * 1_000) / result.elapsedMs,
      p50Ms: percentile(result.latenciesMs, 50),
      p99Ms,
      passed: result.errors === 0 && result.requests > 0 && p99Ms < this.settings.BENCH_P99_LIMIT_MS,
      cpuMs: new Map([...cpuAfter].map(([name, ms]) => [name, ms - (cpuBefore.get(name) ?? 0)])),
      peakResident,
      grpcCalls: callsBetween(grpcBefore, grpcAfter),
    };
  }

  private printBreakdown(best: ThroughputStep, roots: Map<string, number>): void {
    const requests = best.result.requests;
    const seconds = best.result.elapsedMs / 1_000;
    print();
    print(
      `(d, e) at the best passing step (concurrency ${best.concurrency}, ${fixed(best.requestsPerSecond, 0)} req/s, ` +
        `${requests} requests in ${fixed(seconds, 1)} s): CPU by process (tree), RSS at the highest sum and PSS then`,
    );
    const row = (name: string) => {
      const cpuMs = best.cpuMs.get(name) ?? 0;
      const resident = best.peakResident.byService.get(name as GatewayService);
      const proportional = best.peakResident.proportionalByService.get(name as GatewayService);
      return [
        name,
        fixed(cpuMs / requests, 3),
        fixed(cpuMs / 10 / seconds, 0),
        resident === undefined ? '' : megabytes(resident),
        proportional === undefined ? '' : megabytes(proportional),
      ];
    };
    const totalCpu = gatewayCpuMs(best.cpuMs);
    const lines = formatTable(
      ['process', 'CPU ms/req', 'CPU %', 'RSS MB', 'PSS MB'],
      [
        ...gatewayServices.map(row),
        [
          'six gateway processes',
          fixed(totalCpu / requests, 3),
          fixed(totalCpu / 10 / seconds, 0),
          megabytes(best.peakResident.totalBytes),
          megabytes(best.peakResident.proportionalBytes),
        ],
        ...['kafka', 'redis', 'postgres'].filter((name) => roots.has(name)).map(row),
        row('mock upstream'),
        row('load generator'),
      ],
    );
    lines.forEach((line) => print(`  ${line}`));
    const missing = ['kafka', 'redis', 'postgres'].filter((name) => !roots.has(name));
    if (missing.length > 0) print(`  (no process found listening for ${missing.join(', ')})`);
    print('  CPU % is of one core; PostgreSQL, Redis and Kafka serve whatever else runs on this machine too.');
    print("  PSS counts a page shared by several processes (the node binary's) once over them; RSS once per process.");
    const calls = best.grpcCalls.reduce((sum, [, count]) => sum + count, 0);
    print(
      `  gRPC calls handled per request: ${fixed(calls / requests, 2)} (` +
        best.grpcCalls.map(([method, count]) => `${method.split('.').pop()} ${fixed(count / requests, 2)}`).join(', ') +
        ')',
    );
  }

  private printSummary(whole: LatencyComparison, streamed: LatencyComparison, best: ThroughputStep | undefined): void {
    const added = (comparison: LatencyComparison, values: (result: LoadResult) => number[], p: number) =>
      percentile(values(comparison.gateway), p) - percentile(values(comparison.direct), p);
    const latencies = (result: LoadResult) => result.latenciesMs;
    const firstTokens = (result: LoadResult) => result.firstTokenMs;
    const verdict = (value: number | undefined, target: number, atMost: boolean) =>
      value === undefined || !Number.isFinite(value)
        ? 'n/a'
        : (atMost ? value <= target : value >= target)
          ? 'met'
          : 'MISSED';
    const cpuPerRequest = best && gatewayCpuMs(best.cpuMs) / best.result.requests;
    const residentMb = best && best.peakResident.totalBytes / (1024 * 1024);
    const figures: [string, number | undefined, string, number, boolean, number][] = [
      ['added latency p50 (whole answer)', added(whole, latencies, 50), 'ms', targets.addedP50Ms, true, 3],
      ['added latency p99 (whole answer)', added(whole, latencies, 99), 'ms', targets.addedP99Ms, true, 3],
      ['added time to first token p50', added(streamed, firstTokens, 50), 'ms', Number.NaN, true, 3],
      ['added time to first token p99', added(streamed, firstTokens, 99), 'ms', targets.addedFirstTokenP99Ms, true, 3],
      ['sustained rate (p99 < 1 s, no error)', best?.requestsPerSecond, 'req/s', targets.requestsPerSecond, false, 0],
      ['CPU per request, six processes', cpuPerRequest, 'ms', targets.cpuMsPerRequest, true, 3],
      ['RSS of the six processes at that rate', residentMb, 'MB', targets.residentMegabytes, true, 0],
    ];
    print();
    print('summary');
    formatTable(
      ['figure', 'value', 'target', ''],
      figures.map(([name, value, unit, target, atMost, digits]) => [
        name,
        value === undefined ? 'n/a' : `${fixed(value, digits)} ${unit}`,
        Number.isNaN(target) ? '' : `${atMost ? '≤' : '≥'} ${target.toLocaleString('en-GB')} ${unit}`,
        Number.isNaN(target) ? '' : verdict(value, target, atMost),
      ]),
    ).forEach((line) => print(`  ${line}`));
  }

  private async printProfiles(profileDir: string, ageAtFirstRequest: Map<GatewayService, number>): Promise<void> {
    for (const name of gatewayServices) {
      const summary = await summariseProfiles(join(profileDir, name), repoRoot, {
        skipFirstMs: ageAtFirstRequest.get(name) ?? 0,
        top: 15,
      }).catch((error: unknown) => {
        print(`\nprofile of ${name}: ${(error as Error).message}`);
        return undefined;
      });
      if (!summary) continue;
      const busyMs = summary.sampledMs - summary.idleMs;
      const share = (ms: number) => `${fixed((100 * ms) / busyMs, 1)}%`;
      print();
      print(
        `profile of ${name}: ${fixed(busyMs, 0)} ms busy of ${fixed(summary.sampledMs, 0)} ms sampled ` +
          `from the first measured request to exit; self time, % of busy`,
      );
      formatTable(
        ['package', 'self ms', '%'],
        summary.packages.map((entry) => [entry.name, fixed(entry.selfMs, 0), share(entry.selfMs)]),
      ).forEach((line) => print(`  ${line}`));
      formatTable(
        ['function', 'self ms', '%'],
        summary.functions.map((entry) => [entry.name, fixed(entry.selfMs, 0), share(entry.selfMs)]),
      ).forEach((line) => print(`  ${line}`));
    }
    if (this.settings.BENCH_PROFILE_DIR) print(`\nprofiles kept in ${profileDir} (open them in Chrome DevTools)`);
  }
}

async function main(): Promise<void> {
  const settings = readSettings();
  const cleanup = new Cleanup();
  const run = new Run(settings, cleanup);
  const onSignal = () => run.stop('interrupted');
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const watchdog = setTimeout(
    () => run.stop(`time limit of ${settings.BENCH_TIMEOUT_SECONDS} s (BENCH_TIMEOUT_SECONDS) reached`),
    settings.BENCH_TIMEOUT_SECONDS * 1_000,
  );
  try {
    process.exitCode = await run.execute();
  } catch (error) {
    if (run.stopReason === undefined) {
      await run.printLogTails();
      throw error;
    }
  } finally {
    clearTimeout(watchdog);
    await cleanup.runAll();
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
  if (run.stopReason === 'interrupted') process.exitCode = 130;
  else if (run.stopReason !== undefined) process.exitCode = 1;
}

void runOrExit(main)
  .catch((error: unknown) => {
    process.stderr.write(`gateway benchmark failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 1;
  })
  // Everything is closed by now; should a handle linger anyway, do not wait for it.
  .finally(() => setTimeout(() => process.exit(), 2_000).unref());
