import { Server, ServerCredentials, status as GrpcStatus } from '@grpc/grpc-js';
import type { ServerWritableStream } from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { err, gatewayError, ok } from '@gw/errors';
import { routerv1 } from '@gw/proto';
import { createServiceClient, grpcServiceDefinition, startGrpcServer } from '../src';
import type { RunningGrpcServer, StreamRetry } from '../src';
import { partialRegistration, plaintext } from './loopback';

/** How a raw server's call ends: UNAVAILABLE with no answer of the service's own, before or after a message. */
type Ending = 'unavailable' | 'message then unavailable' | 'answers';

const started = () => create(routerv1.CompleteResponseSchema, { event: { case: 'started', value: { poolId: 'p' } } });

/** A router whose calls end as `endings` says, one after the other (the last one for every later call). */
async function rawRouter(endings: Ending[]): Promise<{ port: number; calls: () => number; stop(): void }> {
  const server = new Server();
  let calls = 0;
  const definition = grpcServiceDefinition(routerv1.RouterService);
  server.addService(definition, {
    complete: (call: ServerWritableStream<unknown, unknown>) => {
      const ending = endings[Math.min(calls, endings.length - 1)];
      calls += 1;
      if (ending !== 'unavailable') call.write(started());
      if (ending === 'answers') call.end();
      else call.emit('error', { code: GrpcStatus.UNAVAILABLE, details: 'going away' });
    },
    countTokens: () => undefined,
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return { port, calls: () => calls, stop: () => server.forceShutdown() };
}

const retry: StreamRetry = { attempts: 3, readyWithinMs: 3_000 };
const routerClient = (port: number, streamRetry?: StreamRetry) =>
  createServiceClient(routerv1.RouterService, {
    address: `127.0.0.1:${port}`,
    callee: 'router',
    defaultTimeoutMs: 0,
    transport: plaintext,
    streamRetry,
  });

async function outcome(client: ReturnType<typeof routerClient>, signal?: AbortSignal) {
  const items: string[] = [];
  for await (const item of client.complete({ requestId: 'r' }, { signal })) {
    items.push(item.ok ? String(item.value.event.case) : `${item.error.type}: ${item.error.message}`);
  }
  return items;
}

describe('server-streaming calls sent again after UNAVAILABLE before their first message', () => {
  it('sends a call that ended UNAVAILABLE with no message again, and relays the answer of the next', async () => {
    const router = await rawRouter(['unavailable', 'answers']);
    const client = routerClient(router.port, retry);
    try {
      expect(await outcome(client)).toEqual(['started']);
      expect(router.calls()).toBe(2);
    } finally {
      client.close();
      router.stop();
    }
  });

  it('waits for a router that refused the connection to listen again (a pod replaced)', async () => {
    const first = await startGrpcServer({
      host: '127.0.0.1',
      port: 0,
      transport: plaintext,
      onHandlerFailure: () => undefined,
      services: [],
    });
    const port = first.port;
    await first.shutdown(0);
    const client = routerClient(port, retry);
    let second: RunningGrpcServer | undefined;
    const listening = new Promise<void>((resolve) =>
      setTimeout(() => {
        void startGrpcServer({
          host: '127.0.0.1',
          port,
          transport: plaintext,
          onHandlerFailure: () => undefined,
          services: [
            partialRegistration(routerv1.RouterService, {
              async *complete() {
                yield ok({ event: { case: 'started', value: { poolId: 'p' } } });
              },
            }),
          ],
        }).then((server) => {
          second = server;
          resolve();
        });
      }, 400),
    );
    try {
      expect(await outcome(client)).toEqual(['started']);
    } finally {
      await listening;
      client.close();
      await second?.shutdown(0);
    }
  });

  it('gives up after its attempts, with the 503 the caller may retry', async () => {
    const router = await rawRouter(['unavailable']);
    const client = routerClient(router.port, retry);
    try {
      expect(await outcome(client)).toEqual([
        "overloaded_error: The gateway's router service is temporarily unavailable. Retry with exponential backoff.",
      ]);
      expect(router.calls()).toBe(3);
    } finally {
      client.close();
      router.stop();
    }
  });

  it('never sends again a call that already answered, one the service refused itself, or without streamRetry', async () => {
    const cut = await rawRouter(['message then unavailable', 'answers']);
    const cutClient = routerClient(cut.port, retry);
    const refusing = await startGrpcServer({
      host: '127.0.0.1',
      port: 0,
      transport: plaintext,
      onHandlerFailure: () => undefined,
      services: [
        partialRegistration(routerv1.RouterService, {
          async *complete() {
            refusals += 1;
            yield err(gatewayError('overloaded_error', 'every pool is busy'));
          },
        }),
      ],
    });
    let refusals = 0;
    const refusingClient = routerClient(refusing.port, retry);
    const bare = await rawRouter(['unavailable', 'answers']);
    const bareClient = routerClient(bare.port);
    try {
      expect(await outcome(cutClient)).toEqual([
        'started',
        "overloaded_error: The gateway's router service is temporarily unavailable. Retry with exponential backoff.",
      ]);
      expect(cut.calls()).toBe(1);
      expect(await outcome(refusingClient)).toEqual(['overloaded_error: every pool is busy']);
      expect(refusals).toBe(1);
      expect((await outcome(bareClient))[0]).toMatch(/^overloaded_error/);
      expect(bare.calls()).toBe(1);
    } finally {
      for (const client of [cutClient, refusingClient, bareClient]) client.close();
      cut.stop();
      bare.stop();
      await refusing.shutdown(0);
    }
  });

  it('stops waiting when the caller goes away', async () => {
    const router = await rawRouter(['unavailable']);
    router.stop();
    const client = routerClient(router.port, { attempts: 3, readyWithinMs: 60_000 });
    const caller = new AbortController();
    const startedAt = Date.now();
    setTimeout(() => caller.abort(), 300);
    try {
      const items = await outcome(client, caller.signal);
      expect(items).toHaveLength(1);
      expect(Date.now() - startedAt).toBeLessThan(5_000);
    } finally {
      client.close();
    }
  });
});
