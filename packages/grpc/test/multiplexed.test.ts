import { getEventListeners, once } from 'node:events';
import { Client, credentials, Metadata, status as GrpcStatus } from '@grpc/grpc-js';
import type { ClientDuplexStream } from '@grpc/grpc-js';
import { err, gatewayError, ok } from '@gw/errors';
import { commonv1, create, quotav1, toBinary } from '@gw/proto';
import { waitUntil } from '@gw/testing';
import {
  createMultiplexedClient,
  createServiceClient,
  grpcServiceDefinition,
  maxCrossingMessageBytes,
  registration,
  startGrpcServer,
} from '../src';
import type { CallContext, FinishedCall, RunningGrpcServer } from '../src';
import { plaintext, startRelay } from './loopback';

/**
 * A quota service whose handlers answer by the request id they are given: `limited` refuses with a
 * rate-limit window, `long` with a long message, `throw` throws, `hang` waits for its signal, `held`
 * waits until the test lets it go; anything else is admitted with a lease named after the request.
 */
class FakeQuota {
  readonly arrived: string[] = [];
  readonly requestIds: (string | undefined)[] = [];
  readonly aborted: string[] = [];
  readonly failures: string[] = [];
  private readonly held: (() => void)[] = [];

  registration() {
    return registration(quotav1.QuotaService, {
      acquire: async (request, context) => {
        this.arrived.push(request.requestId);
        this.requestIds.push(context.requestId);
        switch (request.requestId) {
          case 'limited':
            return err(
              gatewayError('rate_limit_error', 'slow down', {
                retryAfterMs: 1500,
                rateLimit: { limit: 10, remaining: 0, resetUnixMs: 1_700_000_000_000 },
              }),
            );
          case 'long':
            return err(gatewayError('invalid_request_error', `unknown model: ${'é'.repeat(5_000)}`));
          case 'throw':
            throw new Error('bug');
          case 'hang':
            await this.aborting(request.requestId, context);
            return err(gatewayError('api_error', 'cancelled'));
          case 'held':
            await new Promise<void>((resolve) => this.held.push(resolve));
            return ok({ leaseId: 'lease_held' });
          default:
            return ok({
              leaseId: `lease_${request.requestId}`,
              leaseTtlMs: 30_000n,
              window: { limit: 10n, remaining: 9n, resetUnixMs: 1_700_000_000_000n },
            });
        }
      },
      reserve: async () => ok({ leaseId: 'lease_reserved' }),
      peek: async () => ok({ window: { limit: 10n, remaining: 10n }, limits: { requestsPerMinute: 10n } }),
      renew: async (request) => ok({ held: request.leaseId === 'lease_a' }),
      release: async () => ok({}),
    });
  }

  /** Lets every `held` call finish. */
  letGo(): void {
    for (const resolve of this.held.splice(0)) resolve();
  }

  heldCount(): number {
    return this.held.length;
  }

  private async aborting(requestId: string, context: CallContext): Promise<void> {
    if (!context.signal.aborted) await once(context.signal, 'abort');
    this.aborted.push(requestId);
  }
}

async function startQuota(quota: FakeQuota, finished: FinishedCall[] = []): Promise<RunningGrpcServer> {
  return startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    transport: plaintext,
    onHandlerFailure: (_error, method) => quota.failures.push(method),
    observeCall: (call) => finished.push(call),
    services: [quota.registration()],
  });
}

const clientsOf = (address: string, defaultTimeoutMs = 5_000) => ({
  unary: createServiceClient(quotav1.QuotaService, {
    address,
    callee: 'quota',
    defaultTimeoutMs,
    transport: plaintext,
  }),
  multiplexed: createMultiplexedClient(quotav1.QuotaService, {
    address,
    callee: 'quota',
    defaultTimeoutMs,
    transport: plaintext,
  }),
});

const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8');

/** Quota's Calls stream opened by hand (no multiplexed client), with every reply it receives. */
function openCallsStream(port: number) {
  const definition = grpcServiceDefinition(quotav1.QuotaService)['calls']!;
  const raw = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
  const stream = raw.makeBidiStreamRequest(
    definition.path,
    definition.requestSerialize,
    definition.responseDeserialize,
    new Metadata(),
  ) as ClientDuplexStream<commonv1.MultiplexedCall, commonv1.MultiplexedReply>;
  const replies: commonv1.MultiplexedReply[] = [];
  stream.on('data', (reply: commonv1.MultiplexedReply) => replies.push(reply));
  return { raw, stream, replies };
}

const acquire = (requestId: string) =>
  toBinary(quotav1.AcquireRequestSchema, create(quotav1.AcquireRequestSchema, { requestId }));

describe('unary calls multiplexed over one stream', () => {
  const quota = new FakeQuota();
  const finished: FinishedCall[] = [];
  let server: RunningGrpcServer;
  let clients: ReturnType<typeof clientsOf>;

  beforeAll(async () => {
    server = await startQuota(quota, finished);
    clients = clientsOf(`127.0.0.1:${server.port}`);
  });

  afterAll(async () => {
    clients.unary.close();
    clients.multiplexed.close();
    await server.shutdown(1_000);
  });

  it('gives every result and error exactly as the unary path does', async () => {
    const live = commonv1.Environment.LIVE;
    const calls = [
      (client: typeof clients.unary) => client.acquire({ requestId: 'a' }),
      (client: typeof clients.unary) => client.acquire({ requestId: 'limited' }),
      (client: typeof clients.unary) => client.acquire({ requestId: 'long' }),
      (client: typeof clients.unary) => client.acquire({ requestId: 'throw' }),
      (client: typeof clients.unary) => client.peek({}),
      (client: typeof clients.unary) => client.renew({ accountId: 'x', environment: live, leaseId: 'lease_a' }),
      (client: typeof clients.unary) => client.renew({ accountId: 'x', environment: live, leaseId: 'lease_gone' }),
      (client: typeof clients.unary) => client.release({ accountId: 'x', environment: live, leaseId: 'lease_a' }),
    ];
    for (const call of calls) {
      const unary = await call(clients.unary);
      expect(await call(clients.multiplexed)).toEqual(unary);
    }

    const admitted = await clients.multiplexed.acquire({ requestId: 'a' });
    expect(admitted.ok && admitted.value.leaseId).toBe('lease_a');
    expect(await clients.multiplexed.acquire({ requestId: 'limited' })).toEqual({
      ok: false,
      error: {
        type: 'rate_limit_error',
        message: 'slow down',
        retryAfterMs: 1500,
        rateLimit: { limit: 10, remaining: 0, resetUnixMs: 1_700_000_000_000 },
      },
    });
    const long = await clients.multiplexed.acquire({ requestId: 'long' });
    expect(long.ok || utf8Bytes(long.error.message)).toBeLessThanOrEqual(maxCrossingMessageBytes);
    const thrown = await clients.multiplexed.acquire({ requestId: 'throw' });
    expect(thrown).toEqual({ ok: false, error: expect.objectContaining({ type: 'api_error' }) });
    expect(JSON.stringify(thrown)).not.toContain('bug');
    expect(quota.failures).toEqual(['Acquire', 'Acquire', 'Acquire']);
  });

  it('counts each multiplexed call at the boundary under its own method, with its request id', async () => {
    await clients.multiplexed.acquire({ requestId: 'counted' }, { requestId: 'req_counted' });
    const counted = await waitUntil(() => finished.find((call) => call.requestId === 'req_counted'), {
      what: 'the multiplexed call to be reported',
    });
    expect(counted).toEqual(
      expect.objectContaining({ service: 'gateway.quota.v1.QuotaService', method: 'Acquire', code: 'OK' }),
    );
    expect(quota.requestIds.at(-1)).toBe('req_counted');
    // A malformed request id is not passed on, as on the unary path.
    await clients.multiplexed.acquire({ requestId: 'malformed' }, { requestId: 'req 1' });
    expect(quota.requestIds.at(-1)).toBeUndefined();
  });

  it('answers 1,000 concurrent calls, each with its own reply, on one stream', async () => {
    const client = createMultiplexedClient(quotav1.QuotaService, {
      address: `127.0.0.1:${server.port}`,
      callee: 'quota',
      defaultTimeoutMs: 10_000,
      transport: plaintext,
    });
    const results = await Promise.all(
      Array.from({ length: 1_000 }, (_, index) => client.acquire({ requestId: `c${index}` })),
    );
    expect(results.map((result) => (result.ok ? result.value.leaseId : result.error.type))).toEqual(
      Array.from({ length: 1_000 }, (_, index) => `lease_c${index}`),
    );
    const streamsBefore = finished.filter((call) => call.method === 'Calls').length;
    client.close();
    const streamsAfter = await waitUntil(
      () => finished.filter((call) => call.method === 'Calls').length,
      {
        what: 'the closed client’s stream to end',
      },
      (count) => count > streamsBefore,
    );
    expect(streamsAfter).toBe(streamsBefore + 1);
  });

  it('fails an unknown method or an undecodable request for that call only; the stream goes on', async () => {
    const { raw, stream, replies } = openCallsStream(server.port);
    stream.write(create(commonv1.MultiplexedCallSchema, { callId: 1n, method: 'Nope', request: acquire('x') }));
    stream.write(
      create(commonv1.MultiplexedCallSchema, { callId: 2n, method: 'Acquire', request: Uint8Array.of(0xff) }),
    );
    stream.write(create(commonv1.MultiplexedCallSchema, { callId: 3n, method: 'Acquire', request: acquire('after') }));
    await waitUntil(() => replies.length === 3, { what: 'three replies' });
    const byId = new Map(replies.map((reply) => [reply.callId, reply.outcome]));
    expect(byId.get(1n)).toEqual({ case: 'status', value: GrpcStatus.UNIMPLEMENTED });
    expect(byId.get(2n)).toEqual({ case: 'status', value: GrpcStatus.INTERNAL });
    expect(byId.get(3n)?.case).toBe('response');
    stream.end();
    await once(stream, 'status');
    raw.close();
  });

  it('fails a call at its deadline as a unary call does, stops its handler, and keeps the stream', async () => {
    const unary = await clients.unary.acquire({ requestId: 'hang' }, { timeoutMs: 150 });
    const abortedBefore = quota.aborted.length;
    const multiplexed = await clients.multiplexed.acquire({ requestId: 'hang' }, { timeoutMs: 150 });
    expect(multiplexed).toEqual(unary);
    expect(multiplexed).toEqual({ ok: false, error: expect.objectContaining({ type: 'overloaded_error' }) });
    await waitUntil(() => quota.aborted.length > abortedBefore, { what: 'the handler to be told' });
    expect((await clients.multiplexed.acquire({ requestId: 'next' })).ok).toBe(true);
  });

  it('cancels a call on abort as a unary call does, and leaves no listener on the signal', async () => {
    const hangs = () => quota.arrived.filter((id) => id === 'hang').length;
    const abortedOnArrival = async (call: (signal: AbortSignal) => ReturnType<typeof clients.unary.acquire>) => {
      const arrivedBefore = hangs();
      const controller = new AbortController();
      const result = call(controller.signal);
      await waitUntil(() => hangs() > arrivedBefore, { what: 'the call to reach its handler' });
      controller.abort();
      await waitUntil(() => quota.aborted.length === hangs(), { what: 'the handler to be told' });
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
      return result;
    };
    const unary = await abortedOnArrival((signal) => clients.unary.acquire({ requestId: 'hang' }, { signal }));
    const multiplexed = await abortedOnArrival((signal) =>
      clients.multiplexed.acquire({ requestId: 'hang' }, { signal }),
    );
    expect(multiplexed).toEqual(unary);
    expect(multiplexed).toEqual({ ok: false, error: expect.objectContaining({ type: 'api_error' }) });

    const kept = new AbortController();
    expect((await clients.multiplexed.acquire({ requestId: 'done' }, { signal: kept.signal })).ok).toBe(true);
    expect(getEventListeners(kept.signal, 'abort')).toHaveLength(0);
  });

  it('fails a call whose signal is already aborted at once, without sending it', async () => {
    const arrivedBefore = quota.arrived.length;
    const result = await clients.multiplexed.acquire({ requestId: 'never' }, { signal: AbortSignal.abort() });
    expect(result).toEqual(await clients.unary.acquire({ requestId: 'never' }, { signal: AbortSignal.abort() }));
    expect(result).toEqual({ ok: false, error: expect.objectContaining({ type: 'api_error' }) });
    expect((await clients.multiplexed.acquire({ requestId: 'after' })).ok).toBe(true);
    expect(quota.arrived.slice(arrivedBefore)).toEqual(['after']);
  });

  it('refuses a call beyond its pending bound with overloaded_error, without sending it', async () => {
    const client = createMultiplexedClient(quotav1.QuotaService, {
      address: `127.0.0.1:${server.port}`,
      callee: 'quota',
      defaultTimeoutMs: 5_000,
      transport: plaintext,
      maxPendingCalls: 2,
    });
    const controller = new AbortController();
    const pending = [1, 2].map(() => client.acquire({ requestId: 'hang' }, { signal: controller.signal }));
    const refused = await client.acquire({ requestId: 'refused' });
    expect(refused).toEqual({
      ok: false,
      error: expect.objectContaining({ type: 'overloaded_error', retryAfterMs: 1000 }),
    });
    expect(quota.arrived).not.toContain('refused');
    controller.abort();
    await Promise.all(pending);
    expect((await client.acquire({ requestId: 'room again' })).ok).toBe(true);
    client.close();
  });
});

describe('a multiplexed stream that ends', () => {
  it('draining, refuses a refusable call and leaves a call of an older caller unanswered, then ends cleanly', async () => {
    const quota = new FakeQuota();
    const server = await startQuota(quota);
    const { raw, stream, replies } = openCallsStream(server.port);
    stream.write(create(commonv1.MultiplexedCallSchema, { callId: 1n, method: 'Acquire', request: acquire('held') }));
    await waitUntil(() => quota.heldCount() === 1, { what: 'the held call to reach the handler' });
    const shutdown = server.shutdown(30_000);
    await waitUntil(() => replies.some((reply) => reply.draining), { what: 'the draining notice' });
    const call = (callId: bigint, refusable: boolean) =>
      create(commonv1.MultiplexedCallSchema, { callId, method: 'Acquire', request: acquire('late'), refusable });
    stream.write(call(2n, true));
    stream.write(call(3n, false));
    await waitUntil(() => replies.some((reply) => reply.callId === 2n), { what: 'the refusal' });
    quota.letGo();
    const status = await once(stream, 'status');
    expect(status[0]).toMatchObject({ code: GrpcStatus.OK });
    expect(replies.map((reply) => [reply.callId, reply.refused, reply.draining, reply.outcome.case])).toEqual([
      [0n, false, true, undefined],
      [2n, true, false, undefined],
      [1n, false, false, 'response'],
    ]);
    expect(quota.arrived).toEqual(['held']);
    raw.close();
    await shutdown;
  });

  it('fails the calls in flight when it breaks, as a broken channel fails unary calls, and reopens', async () => {
    const quota = new FakeQuota();
    const server = await startQuota(quota);
    const relay = await startRelay(server.port);
    const clients = clientsOf(relay.address);

    const unaryCall = clients.unary.acquire({ requestId: 'held' });
    const multiplexedCalls = [1, 2, 3].map(() => clients.multiplexed.acquire({ requestId: 'held' }));
    await waitUntil(() => quota.heldCount() === 4, { what: 'all held calls to reach the handler' });
    relay.cut();
    const unary = await unaryCall;
    expect(unary).toEqual({ ok: false, error: expect.objectContaining({ type: 'overloaded_error' }) });
    for (const result of await Promise.all(multiplexedCalls)) expect(result).toEqual(unary);

    const reopened = await clients.multiplexed.acquire({ requestId: 'again' });
    expect(reopened.ok && reopened.value.leaseId).toBe('lease_again');
    quota.letGo();
    clients.unary.close();
    clients.multiplexed.close();
    await relay.close();
    await server.shutdown(1_000);
  });

  it('ends cleanly when its server drains: calls taken in are answered, the rest go to the next server', async () => {
    const first = new FakeQuota();
    const second = new FakeQuota();
    const draining = await startQuota(first);
    const next = await startQuota(second);
    const relay = await startRelay(draining.port);
    const client = createMultiplexedClient(quotav1.QuotaService, {
      address: relay.address,
      callee: 'quota',
      defaultTimeoutMs: 5_000,
      transport: plaintext,
    });

    const taken = client.acquire({ requestId: 'held' });
    await waitUntil(() => first.heldCount() === 1, { what: 'the held call to reach the first server' });
    relay.moveTo(next.port);
    // From here the first server takes no new call in; it answers the held one, then ends the stream.
    const shutdown = draining.shutdown(30_000);
    const late = client.acquire({ requestId: 'late' });
    first.letGo();

    expect(await taken).toEqual({ ok: true, value: expect.objectContaining({ leaseId: 'lease_held' }) });
    const answered = await late;
    expect(answered.ok && answered.value.leaseId).toBe('lease_late');
    expect(first.arrived).toEqual(['held']);
    expect(second.arrived).toEqual(['late']);
    // Well inside its 30 s grace: the stream did not hold the shutdown up.
    await shutdown;
    client.close();
    await relay.close();
    await next.shutdown(1_000);
  });
});
