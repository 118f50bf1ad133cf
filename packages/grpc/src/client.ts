import { credentials, makeGenericClientConstructor, Metadata } from '@grpc/grpc-js';
import type { Client, ClientReadableStream, ServiceError } from '@grpc/grpc-js';
import type { DescMessage, MessageShape } from '@bufbuild/protobuf';
import { create } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import { err, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { grpcServiceDefinition } from './definition';
import { fromGrpcError } from './error-detail';
import type { CallOptions, ServiceClient } from './types';

export interface ClientOptions {
  /** host:port of the service. */
  address: string;
  /** Name used in error messages, e.g. "auth". */
  callee: string;
  /** Deadline applied when a call gives none. */
  defaultTimeoutMs: number;
}

type UntypedUnary = (
  request: unknown,
  metadata: Metadata,
  options: { deadline?: Date },
  callback: (error: ServiceError | null, response: unknown) => void,
) => { cancel(): void };
type UntypedServerStream = (
  request: unknown,
  metadata: Metadata,
  options: { deadline?: Date },
) => ClientReadableStream<unknown>;

function deadline(options: CallOptions | undefined, fallbackMs: number): Date | undefined {
  const ms = options?.timeoutMs ?? fallbackMs;
  return ms > 0 ? new Date(Date.now() + ms) : undefined;
}

/**
 * A typed client whose calls return results instead of throwing: a refusal by the service and a
 * failure of the call both come back as a GatewayError value.
 */
export function createServiceClient<M extends GenServiceMethods>(
  service: GenService<M>,
  options: ClientOptions,
): ServiceClient<M> & { close(): void } {
  const Constructor = makeGenericClientConstructor(grpcServiceDefinition(service), service.typeName);
  const channel: Client = new Constructor(options.address, credentials.createInsecure(), {
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
  });
  const methods = channel as unknown as Record<string, UntypedUnary | UntypedServerStream>;
  const client: Record<string, unknown> = { close: () => channel.close() };

  for (const method of service.methods) {
    const invoke = methods[method.localName]!.bind(channel);
    if (method.methodKind === 'unary') {
      client[method.localName] = (request: unknown, callOptions?: CallOptions) =>
        new Promise<Result<MessageShape<DescMessage>>>((resolve) => {
          const call = (invoke as UntypedUnary)(
            create(method.input, request as never),
            new Metadata(),
            { deadline: deadline(callOptions, options.defaultTimeoutMs) },
            (error, response) =>
              resolve(error ? err(fromGrpcError(error, options.callee)) : ok(response as MessageShape<DescMessage>)),
          );
          callOptions?.signal?.addEventListener('abort', () => call.cancel(), { once: true });
        });
    } else if (method.methodKind === 'server_streaming') {
      client[method.localName] = (request: unknown, callOptions?: CallOptions) =>
        (async function* () {
          const call = (invoke as UntypedServerStream)(create(method.input, request as never), new Metadata(), {
            deadline: deadline(callOptions, 0),
          });
          const cancel = () => call.cancel();
          callOptions?.signal?.addEventListener('abort', cancel, { once: true });
          try {
            for await (const response of call) yield ok(response as MessageShape<DescMessage>);
          } catch (error) {
            yield err(fromGrpcError(error as ServiceError, options.callee));
          } finally {
            callOptions?.signal?.removeEventListener('abort', cancel);
            call.cancel();
          }
        })();
    }
  }
  return client as ServiceClient<M> & { close(): void };
}
