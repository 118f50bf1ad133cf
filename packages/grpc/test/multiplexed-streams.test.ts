import { once } from 'node:events';
import { createHash } from 'node:crypto';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { routerv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import { waitUntil } from '@gw/testing';
import { createMultiplexedClient, createServiceClient, startGrpcServer } from '../src';
import type { CallContext, MultiplexedClientOptions, RunningGrpcServer } from '../src';
import { loopbackAddress, partialRegistration, plaintext, startRelay } from './loopback';

type Event = MessageInitShape<typeof routerv1.CompleteResponseSchema>;

const sse = (data: string): Event => ({ event: { case: 'sse', value: { event: 'delta', data: Buffer.from(data) } } });

/**
 * A router whose Complete streams by the model named: `mute` nothing at all until cancelled, `many` 200
 * events, `endless` one every loop turn until cancelled, `silent` nothing after Started until cancelled,
 * `large-reply` a 3 MiB message, `refuse` a refusal after one event, `body` one event naming the body's
 * length and digest; anything else two events. It records what its handlers saw.
 */
class FakeRouter {
  readonly produced = new Map<string, number>();
  readonly aborted: string[] = [];
  readonly started: string[] = [];
  readonly finishedAt = new Map<string, number>();

  registration() {
    return partialRegistration(routerv1.RouterService, {
      complete: (request, context) => this.complete(request, context),
    });
  }

  private async *complete(request: routerv1.CompleteRequest, context: CallContext): AsyncIterable<Result<Event>> {
    const id = request.requestId;
    this.started.push(id);
    context.signal.addEventListener('abort', () => this.aborted.push(id), { once: true });
    try {
      if (request.model === 'mute') {
        if (!context.signal.aborted) await once(context.signal, 'abort');
        return;
      }
      yield ok({ event: { case: 'started', value: { poolId: 'pool_a', region: 'eu' } } });
      switch (request.model) {
        case 'many':
        case 'endless':
          for (let index = 0; request.model === 'endless' || index < 200; index += 1) {
            this.produced.set(id, index + 1);
            yield ok(sse(`${id}:${index}`));
            await new Promise((resolve) => setImmediate(resolve));
            if (context.signal.aborted) return;
          }
          break;
        case 'silent':
          if (!context.signal.aborted) await once(context.signal, 'abort');
          return;
        case 'refuse':
          yield err(gatewayError('invalid_request_error', 'no such thing'));
          return;
        case 'large-reply':
          yield ok({ event: { case: 'message', value: { json: Buffer.alloc(3 * 1024 * 1024 + 7, 'y') } } });
          break;
        case 'body':
          yield ok(
            sse(`${request.bodyJson.byteLength}:${createHash('sha256').update(request.bodyJson).digest('hex')}`),
          );
          break;
        default:
          yield ok(sse('two'));
      }
    } finally {
      this.finishedAt.set(id, Date.now());
    }
  }
}

function startRouter(router: FakeRouter, maxMessageBytes?: number): Promise<RunningGrpcServer> {
  return startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    transport: plaintext,
    onHandlerFailure: () => undefined,
    maxMessageBytes,
    services: [router.registration()],
  });
}

const clientOf = (address: string, options: Partial<MultiplexedClientOptions> = {}) =>
  createMultiplexedClient(routerv1.RouterService, {
    address,
    callee: 'router',
    defaultTimeoutMs: 0,
    transport: plaintext,
    ...options,
  });

const request = (requestId: string, model: string, bodyJson = new Uint8Array()) => ({
  requestId,
  model,
  bodyJson,
});

/** Reads a call to its end: the sse events' data, and the failure that ended it if one did. */
async function readAll(replies: AsyncIterable<Result<routerv1.CompleteResponse>>) {
  const data: string[] = [];
  for await (const reply of replies) {
    if (!reply.ok) return { data, failure: reply.error };
    if (reply.value.event.case === 'sse') data.push(Buffer.from(reply.value.event.value.data).toString());
  }
  return { data, failure: undefined };
}

describe('server-streaming calls multiplexed over one stream', () => {
  let router: FakeRouter;
  let server: RunningGrpcServer;
  beforeEach(async () => {
    router = new FakeRouter();
    server = await startRouter(router);
  });
  afterEach(() => server.shutdown(1_000));

  it('streams every message then ends, and passes a refusal on as the call end', async () => {
    const client = clientOf(loopbackAddress(server));
    expect(await readAll(client.complete(request('a', 'two')))).toEqual({ data: ['two'], failure: undefined });
    const refused = await readAll(client.complete(request('b', 'refuse')));
    expect(refused.failure).toMatchObject({ type: 'invalid_request_error', message: 'no such thing' });
    client.close();
  });

  it('a stalled reader holds back its own call only: the other call on the stream streams on', async () => {
    const client = clientOf(loopbackAddress(server), { streamWindow: 8 });
    const stalled = client.complete(request('stalled', 'many'))[Symbol.asyncIterator]();
    expect((await stalled.next()).value).toMatchObject({ ok: true });
    // Its reader reads no more: the service may send at most its window ahead, then waits.
    const other = await readAll(client.complete(request('other', 'many')));
    expect(other.data).toHaveLength(200);
    expect(client.load()).toEqual({ [loopbackAddress(server)]: [1] });
    expect(router.produced.get('stalled')).toBeLessThanOrEqual(8 + 2);
    // Reading again, it gets the rest.
    const rest = await readAll({ [Symbol.asyncIterator]: () => stalled });
    expect(rest.data).toHaveLength(200);
    client.close();
  });

  it('cancels a call both ways: the caller aborts and the handler is told; the service ends and the caller sees it', async () => {
    const client = clientOf(loopbackAddress(server));
    const abort = new AbortController();
    const reading = readAll(client.complete(request('endless', 'endless'), { signal: abort.signal }));
    await waitUntil(() => (router.produced.get('endless') ?? 0) > 5, { what: 'the endless call to stream' });
    abort.abort();
    expect((await reading).failure).toMatchObject({ type: 'api_error' });
    await waitUntil(() => router.aborted.includes('endless'), { what: "the handler's signal to abort" });

    // A caller that stops reading (break) cancels as well.
    for await (const reply of client.complete(request('broken-off', 'endless'))) {
      if (reply.ok && reply.value.event.case === 'sse') break;
    }
    await waitUntil(() => router.aborted.includes('broken-off'), { what: 'the handler of a call left to abort' });
    // The service's end of a call reaches the caller, and the stream carries on.
    expect(await readAll(client.complete(request('after', 'two')))).toEqual({ data: ['two'], failure: undefined });
    client.close();
  });

  it('ends a call at its deadline, stops its handler, and keeps the stream', async () => {
    const client = clientOf(loopbackAddress(server));
    const startedAt = Date.now();
    const late = await readAll(client.complete(request('silent', 'silent'), { timeoutMs: 200 }));
    expect(Date.now() - startedAt).toBeLessThan(2_000);
    // As a per-call stream past its deadline reports it.
    expect(late.failure).toMatchObject({ type: 'overloaded_error' });
    await waitUntil(() => router.aborted.includes('silent'), { what: 'the handler past its deadline to abort' });
    expect(await readAll(client.complete(request('next', 'two')))).toEqual({ data: ['two'], failure: undefined });
    client.close();
  });

  it('spreads calls over its streams, the least loaded first', async () => {
    const client = clientOf(loopbackAddress(server), { streams: { perAddress: 3, resolveEveryMs: 0 } });
    const abort = new AbortController();
    const calls = ['s1', 's2', 's3', 's4', 's5', 's6'].map((id) =>
      readAll(client.complete(request(id, 'silent'), { signal: abort.signal })),
    );
    await waitUntil(() => router.started.length === 6, { what: 'every call to reach the handler' });
    expect(client.load()[loopbackAddress(server)]).toEqual([2, 2, 2]);
    abort.abort();
    await Promise.all(calls);
    client.close();
  });
});

describe('a 30 MiB request on a multiplexed stream', () => {
  it('arrives whole and does not hold up a small call sent after it', async () => {
    const router = new FakeRouter();
    const server = await startRouter(router, 40 * 1024 * 1024);
    const client = clientOf(loopbackAddress(server), { maxMessageBytes: 40 * 1024 * 1024 });
    const body = Buffer.alloc(30 * 1024 * 1024, 'x');
    body.write('{"start":1}', 0);
    const large = readAll(client.complete(request('large', 'body', body)));
    const small = readAll(client.complete(request('small', 'two')));
    expect(await small).toEqual({ data: ['two'], failure: undefined });
    // The small call was answered before the large call's request had all arrived.
    expect(router.started).toEqual(['small']);
    const digest = createHash('sha256').update(body).digest('hex');
    expect(await large).toEqual({ data: [`${body.byteLength}:${digest}`], failure: undefined });
    client.close();
    await server.shutdown(1_000);
  });

  it('a large reply message comes back whole, in pieces', async () => {
    const router = new FakeRouter();
    const server = await startRouter(router);
    const client = clientOf(loopbackAddress(server));
    const sizes: number[] = [];
    for await (const reply of client.complete(request('large', 'large-reply'))) {
      if (reply.ok && reply.value.event.case === 'message') sizes.push(reply.value.event.value.json.byteLength);
    }
    expect(sizes).toEqual([3 * 1024 * 1024 + 7]);
    client.close();
    await server.shutdown(1_000);
  });

  it('is refused alone when larger than the server takes', async () => {
    const router = new FakeRouter();
    const server = await startRouter(router, 1024 * 1024);
    const client = clientOf(loopbackAddress(server));
    const refused = await readAll(client.complete(request('large', 'body', Buffer.alloc(2 * 1024 * 1024))));
    expect(refused.failure).toMatchObject({ type: expect.any(String) });
    expect(router.started).toEqual([]);
    expect(await readAll(client.complete(request('small', 'two')))).toEqual({ data: ['two'], failure: undefined });
    client.close();
    await server.shutdown(1_000);
  });
});

describe('a router going away mid-call', () => {
  it('ends calls that streamed with a retryable error, and moves calls that got nothing to the next router', async () => {
    const first = new FakeRouter();
    const second = new FakeRouter();
    const firstServer = await startRouter(first);
    const secondServer = await startRouter(second);
    const relay = await startRelay(firstServer.port);
    const client = clientOf(relay.address, { streamRetry: { attempts: 3, readyWithinMs: 3_000 } });

    const streaming = client.complete(request('streaming', 'endless'))[Symbol.asyncIterator]();
    expect((await streaming.next()).value).toMatchObject({ ok: true });
    const stopWaiting = new AbortController();
    const waiting = readAll(client.complete(request('waiting', 'mute'), { signal: stopWaiting.signal }));
    await waitUntil(() => first.started.includes('waiting'), { what: 'the mute call to reach the first router' });
    relay.moveTo(secondServer.port);
    relay.cut();

    const cutOff = await readAll({ [Symbol.asyncIterator]: () => streaming });
    expect(cutOff.failure).toMatchObject({ type: 'overloaded_error', retryAfterMs: expect.any(Number) });
    // Nothing of it had come back: it went to the second router, and its handler runs there.
    await waitUntil(() => second.started.includes('waiting'), { what: 'the mute call to move' });
    stopWaiting.abort();
    expect(await waiting).toMatchObject({ data: [], failure: { type: 'api_error' } });
    client.close();
    await relay.close();
    await Promise.all([firstServer.shutdown(1_000), secondServer.shutdown(1_000)]);
  });

  it('a stopping router finishes the calls it has and refuses new ones, which go to the next router', async () => {
    const first = new FakeRouter();
    const second = new FakeRouter();
    const firstServer = await startRouter(first);
    const secondServer = await startRouter(second);
    const relay = await startRelay(firstServer.port);
    const client = clientOf(relay.address);

    const inFlight = client.complete(request('in-flight', 'many'))[Symbol.asyncIterator]();
    expect((await inFlight.next()).value).toMatchObject({ ok: true });
    relay.moveTo(secondServer.port);
    const stopping = firstServer.shutdown(30_000);
    const late = await readAll(client.complete(request('late', 'two')));
    expect(late).toEqual({ data: ['two'], failure: undefined });
    expect(second.started).toEqual(['late']);
    const rest = await readAll({ [Symbol.asyncIterator]: () => inFlight });
    expect(rest).toEqual({ data: expect.any(Array), failure: undefined });
    expect(rest.data).toHaveLength(200);
    // Well inside its grace: the stream did not hold the stop up once its call ended.
    await stopping;
    client.close();
    await relay.close();
    await secondServer.shutdown(1_000);
  });

  it('never hangs when no router answers: a call that got nothing fails retryable within its tries', async () => {
    const router = new FakeRouter();
    const server = await startRouter(router);
    const relay = await startRelay(server.port);
    const client = clientOf(relay.address, { streamRetry: { attempts: 3, readyWithinMs: 3_000 } });
    expect(await readAll(client.complete(request('first', 'two')))).toEqual({ data: ['two'], failure: undefined });
    await server.shutdown(1_000);
    await relay.close();
    const startedAt = Date.now();
    const failed = await readAll(client.complete(request('none', 'two'), { timeoutMs: 8_000 }));
    expect(failed.failure).toMatchObject({ type: 'overloaded_error' });
    expect(Date.now() - startedAt).toBeLessThan(8_000);
    client.close();
  });
});

describe('streams spread over the addresses a name resolves to', () => {
  it('uses pods as they come and lets a pod that left finish its calls and go', async () => {
    const first = new FakeRouter();
    const second = new FakeRouter();
    const firstServer = await startRouter(first);
    const port = firstServer.port;
    const secondServer = await startGrpcServer({
      host: '127.0.0.2',
      port,
      transport: plaintext,
      onHandlerFailure: () => undefined,
      services: [second.registration()],
    });
    let resolved = ['127.0.0.1'];
    const lookups: string[] = [];
    const client = clientOf(`dns:///router.test:${port}`, {
      streams: {
        perAddress: 2,
        resolveEveryMs: 50,
        lookupAddresses: async (host) => {
          lookups.push(host);
          return resolved;
        },
      },
    });
    const [a, b] = [`ipv4:127.0.0.1:${port}`, `ipv4:127.0.0.2:${port}`];
    const stop = new AbortController();
    const held = readAll(client.complete(request('held', 'silent'), { signal: stop.signal }));
    await waitUntil(() => first.started.includes('held'), { what: 'the first call to reach the only pod' });
    expect(lookups[0]).toBe('router.test');

    // A pod came: once resolved, new calls go to the least-loaded streams, its included.
    resolved = ['127.0.0.1', '127.0.0.2'];
    await waitUntil(() => Object.keys(client.load()).length === 2 || lookups.length > 3, { what: 'a lookup' });
    await waitUntil(() => lookups.length > 3, { what: 'more lookups' });
    const more = ['m1', 'm2', 'm3'].map((id) =>
      readAll(client.complete(request(id, 'silent'), { signal: stop.signal })),
    );
    await waitUntil(() => first.started.length + second.started.length === 4, { what: 'every call to arrive' });
    expect(second.started.length).toBeGreaterThanOrEqual(1);
    expect(client.load()[a]!.length + client.load()[b]!.length).toBe(4);

    // The first pod left the name: no new call goes there; its calls go on until they end.
    resolved = ['127.0.0.2'];
    const startedThere = first.started.length;
    await waitUntil(() => lookups.length > 10, { what: 'the next lookups' });
    expect(await readAll(client.complete(request('after', 'two')))).toEqual({ data: ['two'], failure: undefined });
    expect(second.started).toContain('after');
    expect(first.started).toHaveLength(startedThere);
    expect(first.aborted).toEqual([]);
    stop.abort();
    await Promise.all([held, ...more]);
    // Its streams ended with their calls, and its channel went.
    await waitUntil(() => client.load()[a] === undefined, { what: 'the gone pod to be let go' });
    client.close();
    await Promise.all([firstServer.shutdown(1_000), secondServer.shutdown(1_000)]);
  });
});

describe('a router of an older build, without the Calls stream', () => {
  it('gets the calls through the fallback client, a call each', async () => {
    const router = new FakeRouter();
    const served = router.registration();
    // As an older router: every method but the multiplexed stream.
    const older = await startGrpcServer({
      host: '127.0.0.1',
      port: 0,
      transport: plaintext,
      onHandlerFailure: () => undefined,
      services: [
        {
          service: served.service,
          implementation: (hooks) => {
            const { calls: _calls, ...rest } = served.implementation(hooks);
            return rest;
          },
        },
      ],
    });
    const options = { address: loopbackAddress(older), callee: 'router', defaultTimeoutMs: 0, transport: plaintext };
    const client = clientOf(options.address, { fallback: createServiceClient(routerv1.RouterService, options) });
    expect(await readAll(client.complete(request('first', 'two')))).toEqual({ data: ['two'], failure: undefined });
    expect(await readAll(client.complete(request('second', 'two')))).toEqual({ data: ['two'], failure: undefined });
    expect(router.started).toEqual(['first', 'second']);
    client.close();
    await older.shutdown(1_000);
  });
});
