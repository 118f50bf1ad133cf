import { credentials, makeGenericClientConstructor, Server, ServerCredentials } from '@grpc/grpc-js';
import type { ClientReadableStream } from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { ok } from '@gw/errors';
import { pace, waitUntil } from '@gw/testing';
import { routerv1 } from '@gw/proto';
import { channelOptions, grpcServiceDefinition, serverOptions } from '../src';
import { partialRegistration, plaintext } from './loopback';

/**
 * A graceful stop sends GOAWAY and lets the calls in flight finish. grpc-js (1.14) then kept sending keepalive
 * pings on the closing connection, from the server and from the client; Node cancels a ping on a closed
 * session, and grpc-js took that for a dead peer and cut every call still running (the router's streams at a
 * rollout, at the next ping after its SIGTERM). The patch in patches/ sends no ping on a closing connection.
 */
test('a stream outlives a graceful stop past both sides keepalive pings', async () => {
  const pingEveryMs = 200;
  const server = new Server({ ...serverOptions({}), 'grpc.keepalive_time_ms': pingEveryMs });
  const registered = partialRegistration(routerv1.RouterService, {
    async *complete() {
      for (let index = 0; index < 8; index += 1) {
        yield ok({ event: { case: 'started', value: { poolId: String(index) } } });
        // The stream's own pace: one event per keepalive period, so that pings fall between its events.
        await pace(pingEveryMs);
      }
    },
  });
  server.addService(
    grpcServiceDefinition(registered.service),
    registered.implementation({
      onFailure: () => undefined,
      observe: () => undefined,
      draining: new AbortController().signal,
    }),
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  const address = `127.0.0.1:${port}`;
  const Client = makeGenericClientConstructor(grpcServiceDefinition(routerv1.RouterService), 'router');
  const client = new Client(address, credentials.createInsecure(), {
    ...channelOptions({ address, transport: plaintext }),
    'grpc.keepalive_time_ms': pingEveryMs,
  });
  const call = (
    client as unknown as { complete(request: unknown): ClientReadableStream<routerv1.CompleteResponse> }
  ).complete(create(routerv1.CompleteRequestSchema, { requestId: 'r' }));
  const received: string[] = [];
  const ended = new Promise<string>((resolve) => {
    call.on('data', (response: routerv1.CompleteResponse) => {
      if (response.event.case === 'started') received.push(response.event.value.poolId);
    });
    // A cut call errors too; its status says how it ended.
    call.on('error', () => undefined);
    call.on('status', (status: { code: number; details: string }) => resolve(`${status.code} ${status.details}`));
  });
  // Stopped while the stream is under way, with pings still due on both sides.
  await waitUntil(() => received.length >= 2, { what: 'the stream to be under way' });
  const stopped = new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
  expect(await ended).toBe('0 OK');
  expect(received).toEqual(['0', '1', '2', '3', '4', '5', '6', '7']);
  await stopped;
  client.close();
});
