import { getEventListeners, once } from 'node:events';
import { err, gatewayError, ok } from '@gw/errors';
import { policyv1, routerv1 } from '@gw/proto';
import { waitUntil } from '@gw/testing';
import { createServiceClient, startGrpcServer } from '../src';
import type { RunningGrpcServer } from '../src';
import { loopbackAddress, partialRegistration, plaintext } from './loopback';

describe('cancelling calls with an AbortSignal', () => {
  let server: RunningGrpcServer;
  const received: string[] = [];
  let handlersCancelled = 0;
  const finishedSignals: AbortSignal[] = [];

  beforeAll(async () => {
    server = await startGrpcServer({
      host: '127.0.0.1',
      port: 0,
      transport: plaintext,
      onHandlerFailure: () => undefined,
      services: [
        partialRegistration(policyv1.PolicyService, {
          async authorize(request, context) {
            received.push(request.model);
            if (request.model === 'finished') finishedSignals.push(context.signal);
            if (request.model === 'hang') {
              await once(context.signal, 'abort');
              handlersCancelled += 1;
              return err(gatewayError('api_error', 'cancelled'));
            }
            return ok({});
          },
          listModels: async () => ok({ models: [] }),
        }),
        partialRegistration(routerv1.RouterService, {
          async *complete(request) {
            received.push(request.requestId);
            yield ok({ event: { case: 'started', value: { poolId: 'p', region: 'r' } } });
          },
          countTokens: async () => ok({ inputTokens: 1n }),
        }),
      ],
    });
  });

  afterAll(() => server.shutdown(1_000));

  const policyClient = () =>
    createServiceClient(policyv1.PolicyService, {
      address: loopbackAddress(server),
      callee: 'policy',
      defaultTimeoutMs: 5_000,
      transport: plaintext,
    });
  const routerClient = () =>
    createServiceClient(routerv1.RouterService, {
      address: loopbackAddress(server),
      callee: 'router',
      defaultTimeoutMs: 5_000,
      transport: plaintext,
    });

  it('leaves no abort listener behind on a long-lived signal after 1,000 unary calls', async () => {
    const client = policyClient();
    const connection = new AbortController();
    // Ten at a time: more concurrent calls on one signal would be more listeners than Node's warning allows.
    for (let batch = 0; batch < 100; batch += 1) {
      const results = await Promise.all(
        Array.from({ length: 10 }, () => client.authorize({ model: 'm' }, { signal: connection.signal })),
      );
      expect(results.every((result) => result.ok)).toBe(true);
    }
    expect(getEventListeners(connection.signal, 'abort')).toHaveLength(0);
    client.close();
  });

  it('leaves no abort listener behind after server-streaming calls', async () => {
    const client = routerClient();
    const connection = new AbortController();
    for (let index = 0; index < 20; index += 1) {
      for await (const item of client.complete({ requestId: 'listener' }, { signal: connection.signal })) {
        expect(item.ok).toBe(true);
      }
    }
    expect(getEventListeners(connection.signal, 'abort')).toHaveLength(0);
    client.close();
  });

  it('cancels a unary call at once when its signal is already aborted, sending nothing', async () => {
    const client = policyClient();
    const result = await client.authorize({ model: 'already-aborted' }, { signal: AbortSignal.abort() });
    expect(result).toEqual({ ok: false, error: expect.objectContaining({ type: 'api_error' }) });
    // A call sent after it arrives after it would have: the server must not have seen the first.
    expect((await client.authorize({ model: 'after' })).ok).toBe(true);
    expect(received).not.toContain('already-aborted');
    client.close();
  });

  it('cancels a server-streaming call at once when its signal is already aborted, sending nothing', async () => {
    const client = routerClient();
    const seen: string[] = [];
    for await (const item of client.complete({ requestId: 'already-aborted' }, { signal: AbortSignal.abort() })) {
      seen.push(item.ok ? 'response' : item.error.type);
    }
    expect(seen).toEqual(['api_error']);
    for await (const item of client.complete({ requestId: 'after' })) expect(item.ok).toBe(true);
    expect(received).not.toContain('already-aborted');
    client.close();
  });

  it('cancels a running unary call when its signal aborts, and the handler learns of it', async () => {
    const client = policyClient();
    const controller = new AbortController();
    const pending = client.authorize({ model: 'hang' }, { signal: controller.signal });
    await waitUntil(() => received.includes('hang'), { what: 'the call to reach the handler' });
    controller.abort();
    expect(await pending).toEqual({ ok: false, error: expect.objectContaining({ type: 'api_error' }) });
    await waitUntil(() => handlersCancelled === 1, { what: 'the handler to see the cancellation' });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    client.close();
  });

  it('leaves the signal of a call that answered alone (no abort after the fact)', async () => {
    const client = policyClient();
    for (let index = 0; index < 20; index += 1) {
      expect((await client.authorize({ model: 'finished' })).ok).toBe(true);
    }
    client.close();
    // grpc-js reports the finished calls as cancelled shortly after: give it the turns it needs.
    await waitUntil(() => received.filter((model) => model === 'finished').length === 20, { what: 'the calls' });
    for (let turn = 0; turn < 5; turn += 1) await new Promise((resolve) => setImmediate(resolve));
    expect(finishedSignals.filter((signal) => signal.aborted)).toHaveLength(0);
  });
});
