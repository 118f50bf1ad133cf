import { billableTokens, estimateInputTokens, maxTokenCount } from '@gw/usage';
import { err, gatewayError, ok } from '@gw/errors';
import { eventsv1 } from '@gw/proto';
import { holdsFor, waitUntil } from '@gw/testing';
import { handleMessages } from '../../src/pipeline/messages';
import type { CallerRequest } from '../../src/pipeline/types';
import {
  callerRequest,
  fakes,
  FakeSink,
  liveKey,
  messagesBody,
  remainingOf,
  sse,
  started,
  streamedAnswer,
  window,
} from './fakes';
import type { FakeOptions } from './fakes';

/** Runs one request through the pipeline with fakes on every side. */
async function run(
  options: FakeOptions = {},
  body: unknown = messagesBody(true),
  request: Partial<CallerRequest> = {},
) {
  const timeline: string[] = [];
  const sink = options.sink ?? new FakeSink(timeline);
  const world = fakes({ ...options, sink, timeline });
  const caller = callerRequest(body, request);
  await handleMessages(world.deps, caller, sink);
  return { ...world, sink, timeline, caller };
}

describe('handleMessages: authenticate', () => {
  it('refuses a bad key before looking at the body or its media type', async () => {
    const readBody = jest.fn();
    const { sink, quotaCalls, released, usage } = await run(
      { verify: err(gatewayError('authentication_error', 'bad key')) },
      'not json',
      { contentType: 'text/plain', readBody },
    );
    expect(sink.failure?.type).toBe('authentication_error');
    expect(sink.rateLimit).toBeUndefined();
    expect(readBody).not.toHaveBeenCalled();
    expect(quotaCalls).toEqual([]);
    expect(released).toEqual([]);
    expect(usage).toEqual([]);
  });
});

describe('handleMessages: reserve', () => {
  it('refuses an account at its concurrency before reading the body, dropping the upload', async () => {
    const refusal = gatewayError('rate_limit_error', 'Too many concurrent requests: the limit is 2 in flight.', {
      retryAfterMs: 1_000,
      rateLimit: { ...window, remaining: 7 },
    });
    const readBody = jest.fn();
    const discardBody = jest.fn();
    const { sink, quotaCalls, held, released, usage, router } = await run(
      { reserve: err(refusal) },
      messagesBody(true),
      { readBody, discardBody },
    );
    expect(readBody).not.toHaveBeenCalled();
    expect(discardBody).toHaveBeenCalledTimes(1);
    expect(sink.failure).toEqual(refusal);
    // The refusal carries the window: no look at it.
    expect(sink.rateLimit).toEqual(refusal.rateLimit);
    expect(quotaCalls).toEqual(['reserve']);
    expect(held).toEqual([]);
    expect(released).toEqual([]);
    expect(usage).toEqual([]);
    expect(router.requests).toEqual([]);
  });

  it('holds the reserved lease before the body is read, and admits that lease', async () => {
    const world = fakes();
    const raw = Buffer.from(JSON.stringify(messagesBody(true)));
    const caller = callerRequest(messagesBody(true), {
      readBody: async () => {
        world.timeline.push('read body');
        return ok(raw);
      },
    });
    const sink = new FakeSink();
    await handleMessages(world.deps, caller, sink);
    expect(world.timeline.slice(0, 2)).toEqual(['hold', 'read body']);
    expect(world.quotaCalls).toEqual(['reserve', 'acquire lease_1']);
    expect(world.held).toEqual(['lease_1']);
    expect(sink.rateLimit?.remaining).toBe(remainingOf.acquire);
    expect(world.released).toEqual([{ leaseId: 'lease_1', billableTokens: 15n }]);
  });
});

describe('handleMessages: an upload that had arrived when the key was verified', () => {
  const arrived = { bodyArrived: async () => true };

  it('takes its slot with the other limits in one quota call, and holds and releases that lease', async () => {
    const { quotaCalls, held, released, sink } = await run({}, messagesBody(true), arrived);
    expect(quotaCalls).toEqual(['acquire new']);
    expect(held).toEqual(['lease_new']);
    expect(sink.rateLimit?.remaining).toBe(remainingOf.acquire);
    expect(released).toEqual([{ leaseId: 'lease_new', billableTokens: 15n }]);
  });

  it('holds nothing when the limits refuse, and answers with the window the refusal carries', async () => {
    const refusal = gatewayError('rate_limit_error', 'Too many concurrent requests.', {
      retryAfterMs: 1_000,
      rateLimit: { ...window, remaining: 3 },
    });
    const { quotaCalls, held, released, sink, router } = await run(
      { acquire: err(refusal) },
      messagesBody(true),
      arrived,
    );
    expect(quotaCalls).toEqual(['acquire new']);
    expect(sink.failure).toEqual(refusal);
    expect(sink.rateLimit).toEqual(refusal.rateLimit);
    expect(held).toEqual([]);
    expect(released).toEqual([]);
    expect(router.requests).toEqual([]);
  });

  it('refuses a bad body without any quota call but a look at the window', async () => {
    const { quotaCalls, held, sink } = await run({}, { model: 'm' }, arrived);
    expect(sink.failure?.type).toBe('invalid_request_error');
    expect(quotaCalls).toEqual(['peek']);
    expect(held).toEqual([]);
  });

  it('takes the reserving path for a media type that is not JSON', async () => {
    const bodyArrived = jest.fn(async () => true);
    const { quotaCalls } = await run({}, 'x', { contentType: 'text/plain', bodyArrived });
    expect(bodyArrived).not.toHaveBeenCalled();
    expect(quotaCalls).toEqual(['reserve']);
  });
});

describe('handleMessages: admit', () => {
  it('answers a wrong media type with 400 and the reserved window, dropping the upload and freeing the slot', async () => {
    const discardBody = jest.fn();
    const { sink, released, quotaCalls } = await run({}, 'x', { contentType: 'text/plain', discardBody });
    expect(discardBody).toHaveBeenCalledTimes(1);
    expect(sink.failure?.type).toBe('invalid_request_error');
    expect(sink.rateLimit?.remaining).toBe(remainingOf.reserve);
    expect(quotaCalls).toEqual(['reserve']);
    expect(released).toEqual([{ leaseId: 'lease_1', billableTokens: 0n }]);
  });

  const refusedBeforeTheLimits: [string, FakeOptions, unknown, Partial<CallerRequest>][] = [
    ['a body that is not JSON', {}, '{"model":', {}],
    [
      'a body past the limit',
      {},
      messagesBody(true),
      { readBody: async () => err(gatewayError('request_too_large', 'big')) },
    ],
    ['an unknown model', { authorize: err(gatewayError('not_found_error', 'no such model')) }, messagesBody(true), {}],
    [
      'a model outside the plan',
      { authorize: err(gatewayError('permission_error', 'not on this plan')) },
      messagesBody(true),
      {},
    ],
  ];
  it.each(refusedBeforeTheLimits)(
    'refuses %s, releasing the reserved lease with 0 tokens before answering, charging no per-minute slot',
    async (_case, options, body, request) => {
      const { sink, quotaCalls, released, usage, router, timeline } = await run(options, body, request);
      expect(sink.failure).toBeDefined();
      expect(sink.rateLimit?.remaining).toBe(remainingOf.reserve);
      // No Acquire: the window and the allowance are untouched; no Peek: the reservation's window serves.
      expect(quotaCalls).toEqual(['reserve']);
      expect(released).toEqual([{ leaseId: 'lease_1', billableTokens: 0n }]);
      expect(timeline.indexOf('release')).toBeLessThan(timeline.indexOf(`fail:${sink.failure!.type}`));
      expect(usage).toEqual([]);
      expect(router.requests).toEqual([]);
    },
  );

  it('looks at the window again when the reserved one rolled over while the body arrived', async () => {
    const { sink, quotaCalls, released } = await run(
      {
        reserve: ok({
          leaseId: 'lease_1',
          leaseTtlMs: 30_000n,
          window: { limit: 100n, remaining: 3n, resetUnixMs: 1n },
        }),
      },
      '{"model":',
    );
    expect(sink.failure?.type).toBe('invalid_request_error');
    expect(quotaCalls).toEqual(['reserve', 'peek']);
    expect(sink.rateLimit?.remaining).toBe(remainingOf.peek);
    expect(released).toEqual([{ leaseId: 'lease_1', billableTokens: 0n }]);
  });

  it('gives a limits refusal the window it carries and releases the reserved lease, consuming nothing', async () => {
    const refusal = gatewayError('rate_limit_error', 'slow down', {
      retryAfterMs: 1_000,
      rateLimit: { limit: 100, remaining: 0, resetUnixMs: 5 },
    });
    const { sink, released, usage, router, quotaCalls } = await run({ acquire: err(refusal) });
    expect(sink.failure).toEqual(refusal);
    expect(sink.rateLimit).toEqual(refusal.rateLimit);
    expect(quotaCalls).toEqual(['reserve', 'acquire lease_1']);
    expect(router.requests).toEqual([]);
    expect(released).toEqual([{ leaseId: 'lease_1', billableTokens: 0n }]);
    expect(usage).toEqual([]);
  });

  it('releases the reserved lease when admission throws, so that the keeper does not renew it for ever', async () => {
    const world = fakes();
    world.deps.admit.authorize = () => Promise.reject(new Error('bug in a privacy mode'));
    await expect(handleMessages(world.deps, callerRequest(messagesBody(false)), new FakeSink())).rejects.toThrow(
      'bug in a privacy mode',
    );
    expect(world.released).toEqual([{ leaseId: 'lease_1', billableTokens: 0n }]);
  });

  it('sends the privacy-mode body when policy produced one, else the caller body untouched', async () => {
    const transformed = Buffer.from('{"redacted":true}');
    const redacted = await run({ authorize: ok({ bodyJson: transformed }) });
    expect(Buffer.from(redacted.router.requests[0]!.bodyJson).toString()).toBe('{"redacted":true}');
    const plain = await run();
    expect(JSON.parse(Buffer.from(plain.router.requests[0]!.bodyJson).toString())).toEqual(messagesBody(true));
  });
});

describe('handleMessages: relay and settle', () => {
  it('streams every event, and ends the answer once its final usage event is handed to the spool', async () => {
    const { sink, released, usage, timeline } = await run();
    expect(sink.written).toEqual([
      'start',
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
      'end',
    ]);
    expect(timeline.indexOf('usage')).toBeLessThan(timeline.indexOf('message_stop'));
    expect(released).toEqual([{ leaseId: 'lease_1', billableTokens: 15n }]);
    expect(usage[0]).toMatchObject({ outcome: eventsv1.Outcome.SUCCESS, inputTokens: 12n, outputTokens: 3n });
  });

  it('answers a whole message after its usage is recorded', async () => {
    const json = Buffer.from('{"type":"message"}');
    const { sink, usage, timeline } = await run(
      {
        router: {
          events: [
            started,
            { event: { case: 'message', value: { json } } },
            { event: { case: 'finished', value: { usage: { inputTokens: 5n, outputTokens: 7n } } } },
          ],
        },
      },
      messagesBody(false),
    );
    expect(Buffer.from(sink.json!).toString()).toBe('{"type":"message"}');
    expect(timeline).toEqual(['hold', 'release', 'usage', 'json']);
    expect(usage[0]).toMatchObject({ billableTokens: 12n, outcome: eventsv1.Outcome.SUCCESS });
  });

  it('writes the provisional usage event first: the request billed at its input estimate and whole max_tokens', async () => {
    const { provisional, usage } = await run();
    const estimate = estimateInputTokens(messagesBody(true));
    expect(provisional).toHaveLength(1);
    expect(provisional[0]).toMatchObject({
      eventId: 'req_test',
      accountId: 'acct_1',
      inputTokens: BigInt(estimate),
      outputTokens: 16n,
      billableTokens: BigInt(estimate + 16),
      outcome: eventsv1.Outcome.GATEWAY_ERROR,
      errorType: 'api_error',
      streamed: true,
    });
    expect(provisional[0]!.endedAtUnixMs).toBe(provisional[0]!.startedAtUnixMs);
    expect(usage[0]!.eventId).toBe(provisional[0]!.eventId);
  });

  it('sends the client nothing before the provisional record is durable, and does not wait for the final one', async () => {
    let provisionalSynced!: (durable: boolean) => void;
    const provisionalDurable = new Promise<boolean>((resolve) => (provisionalSynced = resolve));
    const timeline: string[] = [];
    const sink = new FakeSink(timeline);
    // The final record never becomes durable in this test: the answer must end all the same.
    const world = fakes({ sink, timeline, provisionalDurable, finalDurable: new Promise<void>(() => undefined) });
    const handled = handleMessages(world.deps, callerRequest(messagesBody(true)), sink);
    await waitUntil(() => world.usage.length, { what: 'the final usage event handed over' });
    expect(world.router.requests).toHaveLength(1);
    expect(sink.written).toEqual([]);
    provisionalSynced(true);
    await handled;
    expect(sink.written.at(0)).toBe('start');
    expect(sink.written.slice(-2)).toEqual(['message_stop', 'end']);
  });

  it('without a provisional record, ends the answer only once the final one is durable', async () => {
    let finalSynced!: () => void;
    const finalDurable = new Promise<void>((resolve) => (finalSynced = resolve));
    const timeline: string[] = [];
    const sink = new FakeSink(timeline);
    const world = fakes({ sink, timeline, provisionalDurable: Promise.resolve(false), finalDurable });
    const handled = handleMessages(world.deps, callerRequest(messagesBody(true)), sink);
    await waitUntil(() => world.usage.length, { what: 'the final usage event handed over' });
    await holdsFor(
      () => sink.ended,
      { what: 'the answer not ended', forMs: 50 },
      (ended) => !ended,
    );
    expect(sink.written).toContain('content_block_delta');
    finalSynced();
    await handled;
    expect(sink.written.slice(-2)).toEqual(['message_stop', 'end']);
  });

  it('settles when a write throws mid-stream: lease released and usage recorded with what was delivered', async () => {
    const sink = new FakeSink();
    sink.throwOnWrite = 5; // message_start, block start, two deltas, then the third delta throws
    const { released, usage, failures } = await run({
      sink,
      router: { events: streamedAnswer(10, { finished: false }) },
    });
    expect(failures).toHaveLength(1);
    expect(released).toEqual([{ leaseId: 'lease_1', billableTokens: 12n + 2n }]);
    expect(usage[0]).toMatchObject({
      outcome: eventsv1.Outcome.GATEWAY_ERROR,
      errorType: 'api_error',
      inputTokens: 12n,
      outputTokens: 2n,
    });
    expect(sink.written.slice(-2)).toEqual(['error', 'end']);
  });

  it('bills input and the output delivered when the upstream fails after some deltas', async () => {
    const events = streamedAnswer(25, { finished: false }).slice(0, 3 + 25);
    const { sink, released, usage } = await run({
      router: { events, failWith: gatewayError('api_error', 'upstream broke') },
    });
    expect(sink.written.slice(-2)).toEqual(['error', 'end']);
    expect(released[0]!.billableTokens).toBe(12n + 25n);
    expect(usage[0]).toMatchObject({ outcome: eventsv1.Outcome.UPSTREAM_ERROR, outputTokens: 25n });
  });

  it('bills what a client read before it went away', async () => {
    const events = streamedAnswer(4, { finished: false }).slice(0, 3 + 4);
    const sink = new FakeSink();
    const world = fakes({ sink, router: { events, hang: true } });
    const caller = callerRequest(messagesBody(true));
    const handled = handleMessages(world.deps, caller, sink);
    await new Promise((resolve) => setImmediate(resolve));
    caller.controller.abort();
    await handled;
    expect(world.released[0]!.billableTokens).toBe(12n + 4n);
    expect(world.usage[0]).toMatchObject({ outcome: eventsv1.Outcome.CLIENT_CANCELLED, outputTokens: 4n });
    expect(sink.written).not.toContain('error');
  });

  it.each([true, false])(
    'bills the input estimate of a request cancelled before the response headers (streamed %s)',
    async (stream) => {
      const sink = new FakeSink();
      const world = fakes({ sink, router: { events: [], hang: true } });
      const body = messagesBody(stream);
      const caller = callerRequest(body);
      const handled = handleMessages(world.deps, caller, sink);
      await new Promise((resolve) => setImmediate(resolve));
      caller.controller.abort();
      await handled;
      // The estimate of @gw/usage: a quarter of the characters of "user" and "hello", rounded up.
      const estimate = BigInt(estimateInputTokens(body));
      expect(estimate).toBe(3n);
      expect(world.released[0]!.billableTokens).toBe(estimate);
      expect(world.usage[0]).toMatchObject({
        outcome: eventsv1.Outcome.CLIENT_CANCELLED,
        inputTokens: estimate,
        outputTokens: 0n,
        billableTokens: estimate,
      });
    },
  );

  it('caps an implausible upstream count to the bound quota and metering apply, in the lease and the event', async () => {
    const huge = 7 * 10 ** 15;
    const events = [
      started,
      sse('message_start', { type: 'message_start', message: { usage: { input_tokens: huge, output_tokens: 1 } } }),
    ];
    const { released, usage } = await run({ router: { events, failWith: gatewayError('overloaded_error', 'gone') } });
    const billable = BigInt(
      billableTokens({ inputTokens: huge, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 }),
    );
    expect(billable).toBe(BigInt(maxTokenCount));
    expect(released[0]!.billableTokens).toBe(billable);
    expect(usage[0]).toMatchObject({ inputTokens: BigInt(maxTokenCount), billableTokens: billable });
  });

  it('prefers the upstream cumulative output count over the delta count', async () => {
    const events = [
      ...streamedAnswer(2, { finished: false }).slice(0, 5),
      sse('message_delta', { type: 'message_delta', delta: {}, usage: { output_tokens: 9 } }),
    ];
    const { released } = await run({ router: { events, failWith: gatewayError('overloaded_error', 'gone') } });
    expect(released[0]!.billableTokens).toBe(12n + 9n);
  });

  it('settles a tokenise stream whose upstream payload is not JSON', async () => {
    const restoration = {
      textRestorer: () => ({ push: (chunk: string) => chunk, flush: () => '' }),
      jsonRestorer: () => ({ push: (chunk: string) => chunk, flush: () => '' }),
      restoreAll: (text: string) => text,
    };
    const events = [
      started,
      sse('message_start', { type: 'message_start', message: { usage: { input_tokens: 3 } } }),
      { event: { case: 'sse' as const, value: { event: 'content_block_delta', data: Buffer.from('{not json') } } },
    ];
    const { released, usage, sink } = await run({
      authorize: ok({ placeholders: [{ placeholder: 'p', original: 'o' }], placeholderNonce: 'n' }),
      restorationFor: () => restoration,
      router: { events },
    });
    expect(released).toEqual([{ leaseId: 'lease_1', billableTokens: 3n }]);
    expect(usage[0]).toMatchObject({ outcome: eventsv1.Outcome.GATEWAY_ERROR });
    expect(sink.written.slice(-2)).toEqual(['error', 'end']);
  });

  it('ends the request when the key is revoked mid-stream, billing what was delivered', async () => {
    const events = streamedAnswer(2, { finished: false }).slice(0, 5);
    const sink = new FakeSink();
    const world = fakes({ sink, router: { events, hang: true } });
    const handled = handleMessages(world.deps, callerRequest(messagesBody(true)), sink);
    await new Promise((resolve) => setImmediate(resolve));
    world.inFlight.revokeKey(liveKey.keyId);
    await handled;
    expect(world.usage[0]).toMatchObject({ outcome: eventsv1.Outcome.REVOKED, outputTokens: 2n });
    expect(world.released[0]!.billableTokens).toBe(14n);
    expect(sink.written.slice(-2)).toEqual(['error', 'end']);
  });

  it('settles at the router’s finished without waiting for the call’s end, which is still read, not cancelled', async () => {
    let endCall = () => {};
    const release = new Promise<void>((resolve) => (endCall = resolve));
    const { sink, usage, router } = await run({ router: { events: streamedAnswer(3), release } });
    // The answer went out while the call had not ended yet.
    expect(sink.written.slice(-2)).toEqual(['message_stop', 'end']);
    expect(usage[0]).toMatchObject({ outcome: eventsv1.Outcome.SUCCESS, outputTokens: 3n });
    expect(router.ended).toEqual([false]);
    expect(router.signals[0]!.aborted).toBe(false);
    endCall();
    await waitUntil(() => router.ended[0], { what: 'the call read to its end', timeoutMs: 2_000 });
    expect(router.signals[0]!.aborted).toBe(false);
  });

  it('ends the call when the relay stops before finished, as leaving the events early does', async () => {
    const sink = new FakeSink();
    sink.throwOnWrite = 3;
    const { router } = await run({ sink, router: { events: streamedAnswer(5), hang: true } });
    expect(router.ended).toEqual([true]);
  });

  it('gives the router stream its deadline: no completion lives for ever', async () => {
    const { router } = await run();
    expect(router.timeoutsMs).toEqual([60_000]);
  });

  it('fails a router that ends without answering as a gateway error, still releasing the lease', async () => {
    const { sink, released, usage } = await run({ router: { events: [] } });
    expect(sink.failure?.type).toBe('api_error');
    expect(released).toHaveLength(1);
    expect(usage[0]).toMatchObject({ outcome: eventsv1.Outcome.UPSTREAM_ERROR, billableTokens: 0n });
  });
});
