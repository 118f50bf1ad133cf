import { setMaxListeners } from 'node:events';
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { LoadJob, LoadResult } from './load-protocol';

/**
 * The load generator, a process of its own so that its CPU is not the gateway's: it runs one LoadJob
 * per IPC message and answers with its LoadResult. Connections are kept alive across jobs, one
 * agent per origin, as an SDK client would keep them.
 */

type Sample = { ok: true; totalMs: number; firstTokenMs?: number } | { ok: false; error: string };

const agents = new Map<string, Agent>();

function agentFor(url: string): Agent {
  const origin = new URL(url).origin;
  let agent = agents.get(origin);
  if (!agent) {
    agent = new Agent({ keepAlive: true, maxSockets: Infinity });
    agents.set(origin, agent);
  }
  return agent;
}

/** Markers are ASCII, so a window of the previous chunk's end finds one split across chunks. */
const markerWindow = 48;

function send(job: LoadJob, agent: Agent, started = performance.now(), signal?: AbortSignal): Promise<Sample> {
  return new Promise((resolve) => {
    const outgoing = request(job.url, { method: 'POST', agent, headers: job.headers, timeout: job.timeoutMs, signal });
    outgoing.once('response', (response) => {
      response.setEncoding('latin1');
      let firstTokenMs: number | undefined;
      let complete = false;
      let tail = '';
      let errorText = '';
      response.on('data', (chunk: string) => {
        if (response.statusCode !== 200) {
          errorText = `${errorText}${chunk}`.slice(0, 300);
          return;
        }
        const window = tail + chunk;
        if (job.streamed) {
          if (firstTokenMs === undefined && window.includes('event: content_block_delta')) {
            firstTokenMs = performance.now() - started;
          }
          if (window.includes('event: message_stop')) complete = true;
        } else if (window.includes('"stop_reason":"end_turn"')) {
          complete = true;
        }
        tail = window.slice(-markerWindow);
      });
      response.once('end', () => {
        const totalMs = performance.now() - started;
        if (response.statusCode !== 200) resolve({ ok: false, error: `HTTP ${response.statusCode}: ${errorText}` });
        else if (!complete) resolve({ ok: false, error: 'the response ended before the completion was whole' });
        else resolve({ ok: true, totalMs, firstTokenMs });
      });
      response.once('error', (error) => resolve({ ok: false, error: error.message }));
    });
    outgoing.once('timeout', () => outgoing.destroy(new Error(`no answer within ${job.timeoutMs} ms`)));
    outgoing.once('error', (error) => resolve({ ok: false, error: error.message }));
    outgoing.end(job.body);
  });
}

function record(result: LoadResult, sample: Sample): void {
  result.requests += 1;
  if (sample.ok) {
    result.latenciesMs.push(sample.totalMs);
    if (sample.firstTokenMs !== undefined) result.firstTokenMs.push(sample.firstTokenMs);
  } else {
    result.errors += 1;
    result.firstError ??= sample.error;
  }
}

/** Requests in flight beyond this fail at once: an open loop against a stalled target must stay bounded. */
const maxOutstanding = 20_000;

/**
 * Open loop: sends what is due every millisecond, then waits up to timeoutMs for the answers of what was
 * sent; requests still unanswered then are cut and fail, so that a step ends in bounded time and leaves
 * no load behind for the next one.
 */
async function runOpenLoop(job: LoadJob, ratePerSecond: number): Promise<LoadResult> {
  const agent = agentFor(job.url);
  const result: LoadResult = { requests: 0, errors: 0, elapsedMs: 0, latenciesMs: [], firstTokenMs: [] };
  const intervalMs = 1_000 / ratePerSecond;
  const total = Math.min(job.requests ?? Infinity, Math.floor(((job.durationMs ?? 0) * ratePerSecond) / 1_000));
  const pending = new Set<Promise<void>>();
  const cut = new AbortController();
  // Every request of the step listens to it: thousands, not a leak.
  setMaxListeners(0, cut.signal);
  const started = performance.now();
  let issued = 0;
  await new Promise<void>((done) => {
    const tick = () => {
      const now = performance.now();
      while (issued < total && started + issued * intervalMs <= now) {
        const scheduled = started + issued * intervalMs;
        issued += 1;
        if (pending.size >= maxOutstanding) {
          record(result, { ok: false, error: `more than ${maxOutstanding} requests outstanding` });
          continue;
        }
        const answered = send(job, agent, scheduled, cut.signal).then((sample) => {
          record(result, sample);
          pending.delete(answered);
        });
        pending.add(answered);
      }
      if (issued < total) setTimeout(tick, 1);
      else done();
    };
    tick();
  });
  const timer = setTimeout(
    () => cut.abort(new Error(`no answer within ${job.timeoutMs} ms of the step's end`)),
    job.timeoutMs,
  );
  await Promise.all(pending);
  clearTimeout(timer);
  result.elapsedMs = performance.now() - started;
  return result;
}

async function run(job: LoadJob): Promise<LoadResult> {
  if (job.ratePerSecond !== undefined) return runOpenLoop(job, job.ratePerSecond);
  const agent = agentFor(job.url);
  const result: LoadResult = { requests: 0, errors: 0, elapsedMs: 0, latenciesMs: [], firstTokenMs: [] };
  const started = performance.now();
  const deadline = started + (job.durationMs ?? Infinity);
  const limit = job.requests ?? Infinity;
  let issued = 0;
  let lastAnswer = started;
  const loop = async () => {
    while (issued < limit && performance.now() < deadline) {
      issued += 1;
      const sample = await send(job, agent);
      lastAnswer = performance.now();
      record(result, sample);
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, loop));
  result.elapsedMs = lastAnswer - started;
  return result;
}

// Ctrl-C reaches the whole process group; the benchmark decides when this process ends.
process.on('SIGINT', () => undefined);
process.once('disconnect', () => process.exit(0));
process.on('message', (job: LoadJob) => {
  void run(job).then((result) => process.send!(result));
});
process.send!({ ready: true });
