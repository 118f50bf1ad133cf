import { create } from '@bufbuild/protobuf';
import { err, ok } from '@gw/errors';
import type { GatewayError, RateLimitWindow, Result } from '@gw/errors';
import { commonv1, policyv1, quotav1, routerv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import { summariseBody } from '../../src/body-checks/body-checks';
import { decodeAuthorization } from '../../src/clients/policy';
import { quotaClient } from '../../src/clients/quota';
import { ReplyDecoder } from '../../src/clients/reply';
import { routerClient } from '../../src/clients/router';
import { InFlightRequests } from '../../src/domain/in-flight';
import type { VerifiedKey } from '../../src/domain/key';
import type { CountTokensDeps } from '../../src/pipeline/count-tokens';
import type {
  AdmitDeps,
  CallerRequest,
  MessagesDeps,
  RequestLog,
  ReserveDeps,
  ResponseSink,
  UsageEventInit,
} from '../../src/pipeline/types';
import { pace } from '@gw/testing';
import { verifiedKey } from '../support/keys';

export const liveKey = verifiedKey({
  keyId: 'key_1',
  accountId: 'acct_1',
  environment: commonv1.Environment.LIVE,
  residency: commonv1.Residency.EU,
  privacyMode: commonv1.PrivacyMode.OFF,
  plan: 'pro',
});

/** The fake quota's window: never rolled over while a test runs. */
export const window: RateLimitWindow = { limit: 100, remaining: 99, resetUnixMs: Date.UTC(2100, 0, 1) };
const windowMessage = (remaining: number) => ({
  limit: BigInt(window.limit),
  remaining: BigInt(remaining),
  resetUnixMs: BigInt(window.resetUnixMs),
});
/** What each quota call answers, told apart by the remaining count. */
export const remainingOf = { reserve: 100, acquire: 99, peek: 98 } as const;

type RouterEvent = MessageInitShape<typeof routerv1.CompleteResponseSchema>;

/** A router stream: its events, then optionally a failure or a throw. */
export interface RouterScript {
  events: RouterEvent[];
  /** Yielded as a failed item after the events. */
  failWith?: GatewayError;
  /** Waits for the signal to abort after the events (a slow upstream). */
  hang?: boolean;
  /** The upstream's time before each event (none: all at once). */
  paceMs?: number;
  /** After the events, the call's end waits for this (the router's bookkeeping before its status). */
  release?: Promise<void>;
}

export const sse = (event: string, data: unknown): RouterEvent => ({
  event: { case: 'sse', value: { event, data: Buffer.from(JSON.stringify(data)) } },
});

export const started: RouterEvent = { event: { case: 'started', value: { poolId: 'eu-a', region: 'eu-west' } } };

export function streamedAnswer(deltas: number, { finished = true } = {}): RouterEvent[] {
  const events: RouterEvent[] = [
    started,
    sse('message_start', { type: 'message_start', message: { usage: { input_tokens: 12, output_tokens: 1 } } }),
    sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  ];
  for (let index = 0; index < deltas; index += 1) {
    events.push(
      sse('content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'text_delta', text: `w${index} ` },
      }),
    );
  }
  events.push(
    sse('content_block_stop', { type: 'content_block_stop', index: 0 }),
    sse('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: 'end_turn' },
      usage: { output_tokens: deltas },
    }),
    sse('message_stop', { type: 'message_stop' }),
  );
  if (finished) {
    events.push({
      event: { case: 'finished', value: { usage: { inputTokens: 12n, outputTokens: BigInt(deltas) } } },
    });
  }
  return events;
}

/** Records what the pipeline did to the client, in order. */
export class FakeSink implements ResponseSink {
  readonly written: string[] = [];
  rateLimit: RateLimitWindow | undefined;
  failure: GatewayError | undefined;
  json: Uint8Array | undefined;
  ended = false;
  /** Makes the n-th writeEvent throw, as a broken socket would. */
  throwOnWrite: number | undefined;
  private events = 0;

  /** Every write also goes to the shared timeline, to check the order against billing. */
  constructor(private readonly timeline: string[] = []) {}

  private note(item: string): void {
    this.written.push(item);
    this.timeline.push(item);
  }

  setRateLimit(value: RateLimitWindow): void {
    this.rateLimit = value;
  }
  fail(error: GatewayError): void {
    this.failure = error;
    this.note(`fail:${error.type}`);
  }
  sendJson(body: Uint8Array): void {
    this.json = body;
    this.note('json');
  }
  startStream(): void {
    this.note('start');
  }
  writeEvent(event: string): void {
    this.events += 1;
    if (this.events === this.throwOnWrite) throw new Error('write after the socket closed');
    this.note(event);
  }
  endStream(): void {
    this.ended = true;
    this.note('end');
  }
  setPrivacyFlags(): void {}
  setDroppedBetas(): void {}
}

export interface Fakes {
  deps: MessagesDeps;
  /** The parts a token count shares with a completion. */
  shared: Pick<CountTokensDeps, 'keys' | 'reserve' | 'admit' | 'refusal' | 'log'>;
  /** The router's connection, under the real router client. */
  rawRouter: RawRouter;
  inFlight: InFlightRequests;
  /** Quota calls in order: `reserve`, `acquire <lease id or "new">`, `peek`. */
  quotaCalls: string[];
  /** Leases handed to the keeper. */
  held: string[];
  released: { leaseId: string; billableTokens: bigint }[];
  usage: UsageEventInit[];
  /** The provisional usage events, one per request sent upstream. */
  provisional: UsageEventInit[];
  /** Order of release and usage against client writes. */
  timeline: string[];
  router: {
    requests: routerv1.CompleteRequest[];
    timeoutsMs: (number | undefined)[];
    signals: (AbortSignal | undefined)[];
    /** Set when the call's events were read to their end (or the call was ended by the reader). */
    ended: boolean[];
  };
  failures: unknown[];
  /** Replies the typed clients could not decode: `callee: field`. */
  malformed: string[];
}

export interface FakeOptions {
  verify?: Result<VerifiedKey>;
  authorize?: Result<MessageInitShape<typeof policyv1.AuthorizeResponseSchema>>;
  reserve?: Result<MessageInitShape<typeof quotav1.ReserveResponseSchema>>;
  acquire?: Result<MessageInitShape<typeof quotav1.AcquireResponseSchema>>;
  router?: RouterScript;
  sink?: FakeSink;
  restorationFor?: AdmitDeps['restorationFor'];
  /** Shared with the sink, to check the order of billing against what the client got. */
  timeline?: string[];
  /** What the provisional usage record's durability resolves to, and when (durable at once by default). */
  provisionalDurable?: Promise<boolean>;
  /** When the final usage record is durable (at once by default). */
  finalDurable?: Promise<void>;
}

type RawQuota = Parameters<typeof quotaClient>[0];
type RawRouter = Parameters<typeof routerClient>[0];

/** Quota's connection as the fake answers it: the replies go through the real quota client's decoding. */
function fakeQuota(options: FakeOptions, quotaCalls: string[]): RawQuota {
  return {
    reserve: async () => {
      quotaCalls.push('reserve');
      const reserved =
        options.reserve ?? ok({ leaseId: 'lease_1', leaseTtlMs: 30_000n, window: windowMessage(remainingOf.reserve) });
      return reserved.ok ? ok(create(quotav1.ReserveResponseSchema, reserved.value)) : reserved;
    },
    acquire: async (request) => {
      quotaCalls.push(`acquire ${request.leaseId ?? 'new'}`);
      const acquired =
        options.acquire ??
        ok({
          leaseId: request.leaseId ?? 'lease_new',
          leaseTtlMs: 30_000n,
          window: windowMessage(remainingOf.acquire),
        });
      return acquired.ok ? ok(create(quotav1.AcquireResponseSchema, acquired.value)) : acquired;
    },
    peek: async () => {
      quotaCalls.push('peek');
      return ok(create(quotav1.PeekResponseSchema, { window: windowMessage(remainingOf.peek), limits: {} }));
    },
    renew: async () => ok(create(quotav1.RenewResponseSchema, { held: true })),
    release: async () => ok(create(quotav1.ReleaseResponseSchema, {})),
  };
}

/** The router's connection playing a script: its events, then optionally a failure or a hang. */
function fakeRouter(script: RouterScript, router: Fakes['router']): RawRouter {
  return {
    complete: (request, callOptions) => {
      router.requests.push(create(routerv1.CompleteRequestSchema, request));
      router.timeoutsMs.push(callOptions?.timeoutMs);
      router.signals.push(callOptions?.signal);
      const call = router.ended.push(false) - 1;
      return (async function* () {
        try {
          for (const event of script.events) {
            if (script.paceMs !== undefined) await pace(script.paceMs);
            yield ok(create(routerv1.CompleteResponseSchema, event));
          }
          if (script.hang && callOptions?.signal) {
            const signal = callOptions.signal;
            await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
            yield err({ type: 'api_error', message: 'cancelled' } as GatewayError);
            return;
          }
          if (script.release) await script.release;
          if (script.failWith) yield err(script.failWith);
        } finally {
          router.ended[call] = true;
        }
      })();
    },
    countTokens: async () => ok(create(routerv1.CountTokensResponseSchema, { inputTokens: 42n })),
  };
}

/** As the LeaseKeeper: each hold releases once, however often it is asked. */
function fakeLeases(held: string[], released: Fakes['released'], timeline: string[]): ReserveDeps['leases'] {
  return {
    hold: (ref) => {
      held.push(ref.leaseId);
      timeline.push('hold');
      let done = false;
      return {
        release: (billableTokens) => {
          if (done) return;
          done = true;
          released.push({ leaseId: ref.leaseId, billableTokens });
          timeline.push('release');
        },
      };
    },
  };
}

export function fakes(options: FakeOptions = {}): Fakes {
  const quotaCalls: string[] = [];
  const held: string[] = [];
  const released: Fakes['released'] = [];
  const usage: UsageEventInit[] = [];
  const provisional: UsageEventInit[] = [];
  const timeline = options.timeline ?? [];
  const failures: unknown[] = [];
  const malformed: string[] = [];
  const noteMalformed = (callee: string, field: string) => malformed.push(`${callee}: ${field}`);
  const router = {
    requests: [] as routerv1.CompleteRequest[],
    timeoutsMs: [] as (number | undefined)[],
    signals: [] as (AbortSignal | undefined)[],
    ended: [] as boolean[],
  };
  const rawRouter = fakeRouter(options.router ?? { events: streamedAnswer(3) }, router);
  const quota = quotaClient(fakeQuota(options, quotaCalls), noteMalformed);
  const log: RequestLog = { request: () => undefined, failure: (error) => failures.push(error) };
  const inFlight = new InFlightRequests();
  const policyDecoder = new ReplyDecoder('policy', noteMalformed);
  const admit: AdmitDeps = {
    authorize: async () => {
      const decided = options.authorize ?? ok({});
      if (!decided.ok) return decided;
      const reply = create(policyv1.AuthorizeResponseSchema, {
        pools: [{ poolId: 'eu-a', jurisdiction: commonv1.Residency.EU, region: 'eu-west', upstreamModel: 'm' }],
        ...decided.value,
      });
      return decodeAuthorization(policyDecoder, reply);
    },
    quota,
    bodyLimitFor: () => 1024 * 1024,
    checkBody: (kind, raw) => Promise.resolve(summariseBody({ kind, body: raw })),
    billingUnavailable: () => false,
    restorationFor:
      options.restorationFor ??
      (() => {
        throw new Error('no restoration expected');
      }),
  };
  const shared = {
    keys: { verify: async () => options.verify ?? ok(liveKey) },
    reserve: { quota, leases: fakeLeases(held, released, timeline) },
    admit,
    refusal: { quota },
    log,
  };
  const deps: MessagesDeps = {
    ...shared,
    inFlight,
    relay: {
      router: routerClient(rawRouter, noteMalformed),
      completionTimeoutMs: 60_000,
      countPrivacyFlags: () => undefined,
    },
    settle: {
      beginUsage: (event) => {
        provisional.push(event);
        return {
          provisionalDurable: options.provisionalDurable ?? Promise.resolve(true),
          finish: (final) => {
            usage.push(final);
            timeline.push('usage');
            return options.finalDurable ?? Promise.resolve();
          },
        };
      },
      reportSettled: () => undefined,
      log,
    },
  };
  return {
    deps,
    shared,
    rawRouter,
    inFlight,
    quotaCalls,
    held,
    released,
    usage,
    provisional,
    timeline,
    router,
    failures,
    malformed,
  };
}

export function callerRequest(
  body: unknown,
  overrides: Partial<CallerRequest> = {},
): CallerRequest & { controller: AbortController } {
  const controller = new AbortController();
  const raw = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  return {
    requestId: 'req_test',
    presentedKey: 'gw_live_x',
    sourceAddress: '127.0.0.1',
    contentType: 'application/json',
    readBody: async () => ok(raw),
    // By default the upload is still arriving when the key is verified: the reserving path.
    bodyArrived: async () => false,
    discardBody: () => undefined,
    protocolHeaders: {},
    query: '',
    signal: controller.signal,
    controller,
    ...overrides,
  };
}

export const messagesBody = (stream: boolean) => ({
  model: 'claude-test',
  max_tokens: 16,
  stream,
  messages: [{ role: 'user', content: 'hello' }],
});
