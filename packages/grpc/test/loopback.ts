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
