import { connect, createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { policyv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import type { GrpcTransport } from '@gw/config';
import { registration, startGrpcServer } from '../src';
import type { CallContext, GrpcServerOptions, RunningGrpcServer, ServiceHandlers, ServiceRegistration } from '../src';

/** The tests' transport unless a test is about TLS. */
export const plaintext: GrpcTransport = { kind: 'plaintext' };

/**
 * Serves only the methods a test needs; the others answer UNIMPLEMENTED. The cast is what keeps a test
 * valid when a service gains methods it does not exercise.
 */
export function partialRegistration<M extends GenServiceMethods>(
  service: GenService<M>,
  handlers: Partial<ServiceHandlers<M>>,
): ServiceRegistration {
  return registration(service, handlers as unknown as ServiceHandlers<M>);
}

type AuthorizeHandler = (
  request: policyv1.AuthorizeRequest,
  context: CallContext,
) => Promise<Result<MessageInitShape<typeof policyv1.AuthorizeResponseSchema>>>;

/** A policy service on 127.0.0.1 whose Authorize is the test's; ListModels answers an empty list. */
export function startPolicyServer(
  authorize: AuthorizeHandler,
  options: Partial<Omit<GrpcServerOptions, 'services'>> = {},
): Promise<RunningGrpcServer> {
  return startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    onHandlerFailure: () => undefined,
    transport: plaintext,
    ...options,
    services: [partialRegistration(policyv1.PolicyService, { authorize, listModels: async () => ok({ models: [] }) })],
  });
}

export const loopbackAddress = (server: RunningGrpcServer) => `127.0.0.1:${server.port}`;

/** A TCP relay on 127.0.0.1 whose connections a test can cut and whose target it can move. */
export async function startRelay(targetPort: number) {
  const sockets = new Set<Socket>();
  let target = targetPort;
  const relay = createServer((inbound) => {
    const outbound = connect(target, '127.0.0.1');
    for (const [socket, peer] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        peer.destroy();
      });
      socket.pipe(peer);
    }
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const cut = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    address: `127.0.0.1:${(relay.address() as AddressInfo).port}`,
    cut,
    moveTo: (port: number) => (target = port),
    close: () =>
      new Promise<void>((resolve) => {
        cut();
        relay.close(() => resolve());
      }),
  };
}
