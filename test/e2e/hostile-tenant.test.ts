import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { connect } from 'node:net';
import Redis from 'ioredis';
import { waitUntil } from '@gw/testing';
import { harness } from './harness';
import { admin } from './http';

/**
 * One account (A) attacks the gateway while another (B) goes on with ordinary requests, one every 50 ms:
 * test and live keys, streamed and not. B must see no failure, and its p99 no more than twice the p99 of
 * 200 of its requests measured first, with nothing else running.
 *
 * The loads are chosen for a 2-core machine running the whole stack and the test (B's quiet p99 there:
 * 16–30 ms), so that a 2× bound measures isolation rather than spare CPU: each attack alone leaves B's
 * p99 where it was, all of them together (about 13 refused requests a second, 4 uploads trickling, 5
 * slow streams open, 4 MB/s of refused upload) raised it 1.0–1.8× there. Each attack's pace is in
 * `edgeAttacks`.
 *
 * Bodies of 4 MB have a test of their own, at one body every 4 s, under the same bound. Ingress checks a
 * large body, and the router reads a test key's, on worker threads, so that their event loops do not stall
 * on them; and ingress runs with a floor under V8's old-generation budget (`serviceNodeFlags.ingress`), without
 * which each body's buffers set off about three full collections in ingress, and B's requests that met
 * their pauses took B's p99 to 1.3–2.5× its quiet p99 here.
 */
const h = harness();
const model = 'claude-sonnet-5';
const ingressPort = Number(new URL(h.baseUrl).port);
const adminPort = Number(new URL(h.adminUrl).port);

const attackWindowMs = 18_000;
const quietSamples = 200;
const victimPeriodMs = 50;

interface Created {
  id: string;
  key: string;
}

async function account(name: string, limits: Record<string, unknown>) {
  const created = await admin<Created>(h, 'POST', '/accounts', { name, plan: 'pro' });
  expect(created.status).toBe(201);
  expect((await admin(h, 'PATCH', `/accounts/${created.body.id}/limits`, limits)).status).toBe(200);
  const key = async (environment: 'test' | 'live', privacyMode: 'off' | 'redact') => {
    const made = await admin<Created>(h, 'POST', '/keys', {
      account_id: created.body.id,
      name: `${name} ${environment} ${privacyMode}`,
      environment,
      residency: 'eu',
      privacy_mode: privacyMode,
    });
    expect(made.status).toBe(201);
    return made.body.key;
  };
  return { id: created.body.id, key };
}

interface Answer {
  status: number;
  body: string;
}

/** One request, through `agent` or on a connection of its own; resolves once the whole answer is in. */
function send(
  path: string,
  options: {
    headers: Record<string, string | string[]>;
    body: string;
    agent?: Agent;
    port?: number;
  },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: '127.0.0.1',
        port: options.port ?? ingressPort,
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...options.headers },
        agent: options.agent ?? false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(options.body);
  });
}

const ask = (content: string, stream = false, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model, max_tokens: 16, stream, messages: [{ role: 'user', content }], ...extra });

const envelopeType = (body: string) => (JSON.parse(body) as { error: { type: string } }).error.type;

/** A connection of its own to ingress, collecting what comes back. */
function rawConnection() {
  const socket = connect(ingressPort, '127.0.0.1');
  let received = '';
  socket.on('data', (data: Buffer) => (received += data.toString('latin1')));
  socket.on('error', () => undefined);
  return { socket, received: () => received, status: () => Number(received.slice(9, 12)) };
}

/**
 * Starts `iteration` every `periodMs` (never more than `inFlight` at once) until `until`; resolves with
 * the outcome of each run once the last has ended. A pace, not a wait: it shapes the load.
 */
function paced(periodMs: number, inFlight: number, until: number, iteration: () => Promise<string>) {
  return new Promise<string[]>((resolve) => {
    const outcomes: string[] = [];
    let running = 0;
    const start = () => {
      running += 1;
      iteration()
        .catch((error: unknown) => `threw ${error instanceof Error ? error.message : String(error)}`)
        .then((outcome) => {
          outcomes.push(outcome);
          running -= 1;
          if (running === 0 && Date.now() >= until) resolve(outcomes);
        });
    };
    const timer = setInterval(() => {
      if (Date.now() >= until) {
        clearInterval(timer);
        if (running === 0) resolve(outcomes);
      } else if (running < inFlight) start();
    }, periodMs);
    start();
  });
}

/** Nearest-rank percentile. */
function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(fraction * sorted.length) - 1)]!;
}

interface Attack {
  /** The load: milliseconds between starts, and how many run at once. */
  periodMs: number;
  inFlight: number;
  /** One run, until `until` at the latest; says what it got. */
  run(until: number): Promise<string>;
  /** What the gateway promises to answer it (429: A meeting its own limits is the defence). */
  answers: RegExp;
}

/** What B's thread posts after each phase. */
interface VictimPhase {
  phase: 'quiet' | 'attacked';
  latencies: number[];
  failures?: string[];
}

interface Outcome {
  quiet: number[];
  attacked: number[];
  failures: string[];
  attacks: Map<string, Map<string, number>>;
}

describe('a hostile tenant', () => {
  const redis = new Redis(h.replica.redisUrl);
  let attacker: { id: string; test: string; redact: string; admin: string };
  let victim: { test: string; live: string };

  beforeAll(async () => {
    // A may hold many requests at once (that is the attack); B's limits are far from anything it sends.
    const a = await account('hostile A', { concurrency: 40, requests_per_minute: 1_000_000 });
    const b = await account('victim B', { concurrency: 20, requests_per_minute: 1_000_000 });
    const aAdmin = await admin<Created>(h, 'POST', `/accounts/${a.id}/admin-keys`, { name: 'hostile admin' });
    attacker = {
      id: a.id,
      test: await a.key('test', 'off'),
      redact: await a.key('test', 'redact'),
      admin: aAdmin.body.key,
    };
    victim = { test: await b.key('test', 'off'), live: await b.key('live', 'off') };
    // Until ingress holds the catalogue, its first calls to policy may meet a channel still backing off.
    await waitUntil(
      async () => (await send('/v1/messages', { headers: { 'x-api-key': victim.live }, body: ask('ready?') })).status,
      { what: 'the gateway to serve B' },
      (status) => status === 200,
    );
  }, 30_000);

  afterAll(() => redis.disconnect());

  /**
   * B's quiet baseline, then B again while every attack runs at its load. B runs on a thread of its own
   * (`fixtures/victim-load.cjs`), so that the attacks' client work in this process never delays B's
   * measurements.
   */
  async function underAttack(attacks: Record<string, Attack>): Promise<Outcome> {
    const victimLoad = new Worker(join(__dirname, 'fixtures', 'victim-load.cjs'), {
      workerData: {
        port: ingressPort,
        model,
        kinds: [
          { key: victim.test, stream: false },
          { key: victim.test, stream: true },
          { key: victim.live, stream: false },
          { key: victim.live, stream: true },
        ],
        periodMs: victimPeriodMs,
        warmMs: 1_000,
        quietSamples,
        attackWindowMs,
      },
    });
    try {
      const phases = new Map<VictimPhase['phase'], (phase: VictimPhase) => void>();
      const posted = (name: VictimPhase['phase']) =>
        new Promise<VictimPhase>((resolve, reject) => {
          phases.set(name, resolve);
          victimLoad.on('error', reject);
        });
      victimLoad.on('message', (phase: VictimPhase) => phases.get(phase.phase)?.(phase));
      const quietPhase = posted('quiet');
      const attackedPhase = posted('attacked');
      const quiet = await quietPhase;
      const until = Date.now() + attackWindowMs;
      const running = Object.entries(attacks).map(async ([name, attack]) => {
        const outcomes = await paced(attack.periodMs, attack.inFlight, until, () => attack.run(until));
        const counts = new Map<string, number>();
        for (const outcome of outcomes) counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
        return [name, counts] as const;
      });
      const attacked = await attackedPhase;
      const outcome = {
        quiet: quiet.latencies,
        attacked: attacked.latencies,
        failures: attacked.failures ?? [],
        attacks: new Map(await Promise.all(running)),
      };
      report(outcome);
      return outcome;
    } finally {
      await victimLoad.terminate();
    }
  }

  function report({ quiet, attacked, failures, attacks }: Outcome): void {
    const tail = (values: number[]) =>
      `p50 ${percentile(values, 0.5).toFixed(1)} ms, p95 ${percentile(values, 0.95).toFixed(1)} ms, p99 ${percentile(values, 0.99).toFixed(1)} ms`;
    const lines = [
      `B quiet: ${quiet.length} requests, ${tail(quiet)}`,
      `B under attack: ${attacked.length} requests, ${tail(attacked)}, ${failures.length} failed`,
      ...[...attacks].map(
        ([name, counts]) => `A ${name}: ${[...counts].map(([outcome, count]) => `${count}× ${outcome}`).join(', ')}`,
      ),
    ];
    process.stdout.write(`hostile tenant:\n  ${lines.join('\n  ')}\n`);
  }

  /** Every attack ran and got only the answers it should have; A holds no slot once it has stopped. */
  async function expectAttacksAnswered(attacks: Record<string, Attack>, outcome: Outcome): Promise<void> {
    for (const [name, attack] of Object.entries(attacks)) {
      const seen = [...(outcome.attacks.get(name)?.keys() ?? [])];
      expect({ name, ran: seen.length > 0, unexpected: seen.filter((answer) => !attack.answers.test(answer)) }).toEqual(
        {
          name,
          ran: true,
          unexpected: [],
        },
      );
    }
    await waitUntil(
      () => redis.zcard(`q:{a:${attacker.id}:test}:inflight`),
      { what: "A's concurrency slots to be free" },
      (held) => held === 0,
    );
  }

  function edgeAttacks(): Record<string, Attack> {
    const huge = 'x'.repeat(100 * 1024);
    const malformed = [
      'GET /v1/models HTTP/1.1\r\nhost: a\r\nx-note: a\u0001b\r\n\r\n',
      'GET /v1/models HTTP/1.1\nhost: a\n\n',
      'GET /v1/models HTTP/1.1\r\nhost: a\r\nx-note: a\r\n b\r\n\r\n',
      `GET /v1/models HTTP/1.1\r\nhost: a\r\nx-note: ${'n'.repeat(17 * 1024)}\r\n\r\n`,
      `POST /v1/messages HTTP/1.1\r\nhost: a\r\nx-api-key: ${attacker.test}\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n`,
      'GET /v1/models HTTP/1.1\r\n\r\n',
    ];
    let malformedTurn = 0;
    const junkIps = Array.from({ length: 1_000 }, (_, index) => `${index}.${'9'.repeat(100)}`);
    /** An error answer: status, type, and whether it stayed short whatever the caller sent. */
    const refusal = (answer: Answer, shortBelow: number) =>
      `${answer.status} ${envelopeType(answer.body)} ${answer.body.length < shortBelow ? 'short' : 'long'}`;
    return {
      'unknown model with a 100 KB alias': {
        periodMs: 500,
        inFlight: 1,
        run: async () =>
          refusal(
            await send('/v1/messages', {
              headers: { 'x-api-key': attacker.test },
              body: ask('hi', false, { model: huge }),
            }),
            1024,
          ),
        answers: /^400 invalid_request_error short$/,
      },
      'gw-test:error: and 100 KB': {
        periodMs: 500,
        inFlight: 1,
        run: async () =>
          refusal(
            await send('/v1/messages', { headers: { 'x-api-key': attacker.test }, body: ask(`gw-test:error:${huge}`) }),
            2048,
          ),
        answers: /^400 invalid_request_error short$/,
      },
      'admin allowed_ips of 1,000 junk entries': {
        periodMs: 1_000,
        inFlight: 1,
        run: async () =>
          refusal(
            await send('/admin/v1/keys', {
              port: adminPort,
              headers: { authorization: `Bearer ${attacker.admin}` },
              body: JSON.stringify({
                account_id: attacker.id,
                name: 'junk',
                environment: 'test',
                residency: 'eu',
                privacy_mode: 'off',
                allowed_ips: junkIps,
              }),
            }),
            1024,
          ),
        answers: /^400 invalid_request_error short$/,
      },
      // A byte every 500 ms, under the 10 s pause bound: each holds one of A's slots to the end.
      'trickled uploads': {
        periodMs: 250,
        inFlight: 4,
        run: (until) =>
          new Promise((resolve) => {
            const upload = rawConnection();
            upload.socket.write(
              `POST /v1/messages HTTP/1.1\r\nhost: a\r\ncontent-type: application/json\r\nx-api-key: ${attacker.test}\r\ncontent-length: 100000\r\n\r\n{`,
            );
            const trickle = setInterval(() => {
              if (Date.now() < until && upload.received() === '') {
                upload.socket.write(' ');
                return;
              }
              clearInterval(trickle);
              upload.socket.destroy();
              resolve(upload.received() === '' ? 'held to the end' : `answered ${upload.status()}`);
            }, 500);
          }),
        answers: /^held to the end$/,
      },
      // 33 MiB declared, over the plan's limit, sent at 4 MB/s until the gateway closes the connection.
      'over-limit uploads': {
        periodMs: 100,
        inFlight: 1,
        run: (until) =>
          new Promise((resolve) => {
            const upload = rawConnection();
            upload.socket.write(
              `POST /v1/messages HTTP/1.1\r\nhost: a\r\ncontent-type: application/json\r\nx-api-key: ${attacker.test}\r\ncontent-length: ${33 * 1024 * 1024}\r\n\r\n`,
            );
            const chunk = Buffer.alloc(1024 * 1024, 0x20);
            const pump = setInterval(() => {
              if (upload.socket.writable && Date.now() < until) upload.socket.write(chunk);
            }, 256);
            upload.socket.on('close', () => {
              clearInterval(pump);
              resolve(upload.received() === '' ? 'closed unanswered' : `answered ${upload.status()}`);
            });
          }),
        answers: /^answered 413$/,
      },
      'malformed HTTP': {
        periodMs: 250,
        inFlight: 1,
        run: () =>
          new Promise((resolve) => {
            const connection = rawConnection();
            connection.socket.on('close', () => resolve(`answered ${connection.status()}`));
            connection.socket.write(malformed[malformedTurn++ % malformed.length]!);
          }),
        answers: /^answered (400|413)$/,
      },
      'duplicate credential headers': {
        periodMs: 250,
        inFlight: 1,
        run: async () => {
          const answer = await send('/v1/messages', {
            headers: { 'x-api-key': [attacker.test, attacker.test] },
            body: ask('hi'),
          });
          return `${answer.status} ${envelopeType(answer.body)}`;
        },
        answers: /^401 authentication_error$/,
      },
      // Five slow streams open at a time, each dropped by its client after the first delta.
      'streams dropped mid-way': {
        periodMs: 500,
        inFlight: 5,
        run: () =>
          new Promise((resolve, reject) => {
            const outgoing = request({
              host: '127.0.0.1',
              port: ingressPort,
              path: '/v1/messages',
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-api-key': attacker.test },
              agent: false,
            });
            outgoing.on('error', () => undefined);
            outgoing.on('response', (response) => {
              response.on('error', () => undefined);
              response.on('data', (chunk: Buffer) => {
                if (response.statusCode === 200 && chunk.toString('utf8').includes('content_block_delta')) {
                  outgoing.destroy();
                  resolve('dropped after a delta');
                }
              });
              response.on('end', () =>
                response.statusCode === 200
                  ? reject(new Error('the slow stream ended by itself'))
                  : resolve(String(response.statusCode)),
              );
            });
            outgoing.end(ask('gw-test:slow', true));
          }),
        answers: /^(dropped after a delta|429)$/,
      },
    };
  }

  it("leaves another account's requests whole and within twice their quiet p99 while it attacks the edge", async () => {
    const attacks = edgeAttacks();
    const outcome = await underAttack(attacks);
    await expectAttacksAnswered(attacks, outcome);
    expect(outcome.failures).toEqual([]);
    expect(outcome.attacked.length).toBeGreaterThan((attackWindowMs / victimPeriodMs) * 0.5);
    expect(percentile(outcome.attacked, 0.99)).toBeLessThanOrEqual(2 * percentile(outcome.quiet, 0.99));
  }, 90_000);

  it("leaves another account's requests whole and within twice their quiet p99 while it sends 4 MB bodies in redact mode", async () => {
    const body = ask(
      'Reach alice.smith@example.com or +44 20 7946 0958 about card 4111 1111 1111 1111. '.repeat(50_000),
    );
    expect(body.length).toBeGreaterThan(4_000_000);
    const attacks: Record<string, Attack> = {
      // One body every 4 s: redacting one takes a worker thread about a second, a quarter of a core here.
      '4 MB bodies in redact mode': {
        periodMs: 4_000,
        inFlight: 1,
        run: async () => {
          const answer = await send('/v1/messages', { headers: { 'x-api-key': attacker.redact }, body });
          return answer.status === 200 ? '200' : `${answer.status} ${envelopeType(answer.body)}`;
        },
        answers: /^(200|503 overloaded_error)$/,
      },
    };
    const outcome = await underAttack(attacks);
    await expectAttacksAnswered(attacks, outcome);
    expect(outcome.failures).toEqual([]);
    expect(outcome.attacked.length).toBeGreaterThan((attackWindowMs / victimPeriodMs) * 0.5);
    expect(percentile(outcome.attacked, 0.99)).toBeLessThanOrEqual(2 * percentile(outcome.quiet, 0.99));
  }, 90_000);
});
