import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gatewayError } from '@gw/errors';
import type { GatewayError, RateLimitWindow } from '@gw/errors';
import { DurableUsagePublisher } from '@gw/kafka';
import type { ProvisionalRecord, UsageEvent, UsageEventPublisher } from '@gw/kafka';
import { eventsv1 } from '@gw/proto';
import { createLogger } from '@gw/telemetry';
import { VolatileFiles, waitUntil } from '@gw/testing';
import { handleMessages } from '../../src/pipeline/messages';
import type { ResponseSink } from '../../src/pipeline/types';
import { requestUsageRecorder } from '../../src/usage-spool/billing-spool';
import { callerRequest, fakes, started, streamedAnswer } from '../pipeline/fakes';
import type { RouterScript } from '../pipeline/fakes';

/**
 * Crashes the machine under the usage spool while requests run, losing every write not synced (the spool
 * sits on VolatileFiles, not on a real disk whose page cache a process kill leaves intact), restarts the
 * spool on what the disk kept, and checks that every token a client received is billed, never less, and
 * each request once: metering keeps the first event of each event id (usage-rows.ts, firstOfEachEvent, and
 * ON CONFLICT (event_id) DO NOTHING), so the test bills the same way.
 */

/** Kafka: every event the spool delivered, in order; a dead process delivers nothing more. */
class FakeKafka implements UsageEventPublisher {
  constructor(
    private readonly topic: UsageEvent[],
    private readonly alive: () => boolean,
  ) {}
  async connect(): Promise<void> {}
  async send(event: UsageEvent): Promise<void> {
    if (!this.alive()) throw new Error('the process is dead');
    this.topic.push(event);
  }
  async disconnect(): Promise<void> {}
}

/** What one client received: content deltas, and whether its answer ended (message_stop or a whole message). */
interface ClientView {
  deltas: number;
  completed: boolean;
}

/** The client's side of the connection: what reaches it before the crash, and nothing after. */
class ClientSink implements ResponseSink {
  readonly view: ClientView = { deltas: 0, completed: false };

  constructor(
    private readonly machine: Machine,
    private readonly onDelta: (deltas: number) => void = () => undefined,
  ) {}

  private received(apply: () => void): void {
    if (this.machine.crashed) return;
    apply();
    this.machine.clientWrites += 1;
    if (this.machine.clientWrites === this.machine.crashAtWrite) this.machine.crash();
  }
  setRateLimit(_window: RateLimitWindow): void {}
  fail(_error: GatewayError): void {
    this.received(() => undefined);
  }
  sendJson(): void {
    this.received(() => (this.view.completed = true));
  }
  startStream(): void {
    this.received(() => undefined);
  }
  writeEvent(event: string): void {
    this.received(() => {
      if (event === 'content_block_delta') {
        this.view.deltas += 1;
        this.onDelta(this.view.deltas);
      }
      if (event === 'message_stop') this.view.completed = true;
    });
  }
  endStream(): void {
    this.received(() => undefined);
  }
  setPrivacyFlags(): void {}
  setDroppedBetas(): void {}
}

/** The process and its disk: crashing it keeps only what was synced. */
class Machine {
  crashed = false;
  clientWrites = 0;
  /** The topic's length at the crash: what Kafka had taken from the dead process. */
  deliveredAtCrash = 0;
  recovered: VolatileFiles | undefined;

  constructor(
    readonly files: VolatileFiles,
    readonly topic: UsageEvent[],
    readonly crashAtWrite: number | undefined,
  ) {}

  crash(): void {
    if (this.crashed) return;
    this.crashed = true;
    this.deliveredAtCrash = this.topic.length;
    this.recovered = this.files.crash();
  }
}

const maxTokens = 64;
const body = (stream: boolean) => ({
  model: 'claude-test',
  max_tokens: maxTokens,
  stream,
  messages: [{ role: 'user', content: 'hello there' }],
});
const wholeAnswer = Buffer.from('{"type":"message"}');

/**
 * The requests of one run: streams that end (one from an upstream answering at once, faster than a sync),
 * streams cut by the client or the upstream, whole answers.
 */
const shapes: { stream: boolean; script: RouterScript; leaveAfterDeltas?: number }[] = [
  { stream: true, script: { events: streamedAnswer(8), paceMs: 1 } },
  { stream: true, script: { events: streamedAnswer(6) } },
  { stream: true, script: { events: streamedAnswer(20), paceMs: 1 }, leaveAfterDeltas: 5 },
  {
    stream: true,
    script: {
      events: streamedAnswer(12).slice(0, 9),
      failWith: gatewayError('overloaded_error', 'the upstream stopped'),
      paceMs: 1,
    },
  },
  {
    stream: false,
    script: {
      events: [
        started,
        { event: { case: 'message', value: { json: wholeAnswer } } },
        { event: { case: 'finished', value: { usage: { inputTokens: 5n, outputTokens: 7n } } } },
      ],
      paceMs: 2,
    },
  },
];
const requestsPerRun = 15;

const silentLogger = createLogger('ingress', 'silent');
const noMetrics = { usageHanded: () => undefined, usageDurable: () => undefined };

interface RunResult {
  views: ClientView[];
  ids: string[];
  /** Final events durable before the crash, by event id. */
  durableFinals: Map<string, UsageEvent>;
  topic: UsageEvent[];
  deliveredAtCrash: number;
}

/** Runs the requests through the pipeline over a spool on a volatile disk, crashing it at the given client write. */
async function runAndCrash(root: string, crashAtWrite: number | 'after the answers'): Promise<RunResult> {
  const topic: UsageEvent[] = [];
  const machine = new Machine(new VolatileFiles(1), topic, typeof crashAtWrite === 'number' ? crashAtWrite : undefined);
  const spoolOptions = { segmentBytes: 1024, drainBatchEvents: 4, retryInitialMs: 5, stopTimeoutMs: 1_000 };
  const publisher = new DurableUsagePublisher(new FakeKafka(topic, () => !machine.crashed), {
    ...spoolOptions,
    dir: join(root, 'before'),
    files: machine.files,
  });
  await publisher.connect();
  const durableFinals = new Map<string, UsageEvent>();
  const spool = {
    begin: (event: UsageEvent) => publisher.begin(event),
    send: (event: UsageEvent, provisional?: ProvisionalRecord) =>
      publisher.send(event, provisional).then(() => {
        if (!machine.crashed) durableFinals.set(event.eventId, event);
      }),
  };
  const beginUsage = requestUsageRecorder(spool, 'gateway.usage.v1', silentLogger, noMetrics);

  const ids = Array.from({ length: requestsPerRun }, (_, index) => `req_${index}`);
  const views: ClientView[] = [];
  const runs = ids.map((requestId, index) => {
    const shape = shapes[index % shapes.length]!;
    const world = fakes({ router: shape.script });
    const caller = callerRequest(body(shape.stream), { requestId });
    const sink = new ClientSink(machine, (deltas) => {
      if (deltas === shape.leaveAfterDeltas) caller.controller.abort();
    });
    views.push(sink.view);
    return handleMessages({ ...world.deps, settle: { ...world.deps.settle, beginUsage } }, caller, sink);
  });
  await Promise.all(runs);
  // Every answer has ended; their final records may not be synced yet.
  machine.crash();
  await publisher.disconnect().catch(() => undefined);

  const recovered = new DurableUsagePublisher(new FakeKafka(topic, () => true), {
    ...spoolOptions,
    dir: join(root, 'after'),
    files: machine.recovered!,
  });
  await recovered.connect();
  await waitUntil(
    () => recovered.depth().events,
    { what: 'the recovered spool delivered', timeoutMs: 5_000 },
    (n) => n === 0,
  );
  await recovered.disconnect();
  return { views, ids, durableFinals, topic, deliveredAtCrash: machine.deliveredAtCrash };
}

/** What metering bills: the first event of each event id. */
function billedEvents(topic: UsageEvent[]): Map<string, UsageEvent> {
  const billed = new Map<string, UsageEvent>();
  for (const event of topic) if (!billed.has(event.eventId)) billed.set(event.eventId, event);
  return billed;
}

const isProvisional = (event: UsageEvent) =>
  event.outcome === eventsv1.Outcome.GATEWAY_ERROR && event.endedAtUnixMs === event.startedAtUnixMs;

describe('a crash that loses unsynced writes under the usage spool', () => {
  let root: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'crash-billing-'));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  // Client writes across the run's requests at which the machine crashes: before any token, mid-stream, late.
  const crashPoints: (number | 'after the answers')[] = [1, 4, 9, 17, 30, 48, 70, 'after the answers'];

  it.each(crashPoints)(
    'bills every token the clients received, once, when it crashes at client write %s',
    async (crashAt) => {
      const { views, ids, durableFinals, topic, deliveredAtCrash } = await runAndCrash(root, crashAt);
      const billed = billedEvents(topic);
      ids.forEach((id, index) => {
        const view = views[index]!;
        const event = billed.get(id);
        if (view.deltas > 0 || view.completed) {
          expect({ id, billed: event !== undefined }).toEqual({ id, billed: true });
          expect(Number(event!.outputTokens)).toBeGreaterThanOrEqual(view.deltas);
          expect(Number(event!.billableTokens)).toBeGreaterThanOrEqual(view.deltas);
        }
        // A final record durable before the crash is what is billed: never replaced by the provisional bound.
        const final = durableFinals.get(id);
        if (final) {
          expect({ id, outcome: event?.outcome, billable: event?.billableTokens }).toEqual({
            id,
            outcome: final.outcome,
            billable: final.billableTokens,
          });
        }
        // One that Kafka took from the dead process is billed, whatever recovery found.
        const deliveredBefore = topic.slice(0, deliveredAtCrash).find((delivered) => delivered.eventId === id);
        if (deliveredBefore) expect(event).toBe(deliveredBefore);
      });
      // A request billed from its provisional record is billed its input estimate and whole max_tokens.
      for (const event of billed.values()) {
        if (isProvisional(event)) expect(event.outputTokens).toBe(BigInt(maxTokens));
      }
      if (crashAt === 'after the answers') {
        // The answers did not wait for their final records' sync: the crash lost some, billed from their provisional one.
        expect(views.every((view) => view.completed || view.deltas > 0)).toBe(true);
        expect([...billed.values()].filter(isProvisional).length).toBeGreaterThan(0);
      }
    },
  );
});
