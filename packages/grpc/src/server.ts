import { once } from 'node:events';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import type {
  handleServerStreamingCall,
  handleUnaryCall,
  sendUnaryData,
  ServerUnaryCall,
  ServerWritableStream,
  UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import { create } from '@bufbuild/protobuf';
import type { DescMessage, DescMethod, DescService, MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import { gatewayError, internalErrorMessage } from '@gw/errors';
import type { Result } from '@gw/errors';
import { grpcServiceDefinition } from './definition';
import { toGrpcStatus } from './error-detail';
import type { CallContext, ServerStreamHandler, ServiceHandlers, UnaryHandler } from './types';

/** Where a service reports a handler that threw: a bug, never a decision. */
export type HandlerFailureLog = (error: unknown, method: string) => void;

export interface ServiceRegistration {
  service: DescService;
  implementation: (onFailure: HandlerFailureLog) => UntypedServiceImplementation;
}

const internalFailure = () => toGrpcStatus(gatewayError('api_error', internalErrorMessage));

function callContext(call: { on(event: 'cancelled', listener: () => void): unknown }): CallContext {
  const controller = new AbortController();
  call.on('cancelled', () => controller.abort());
  return { signal: controller.signal };
}

function unary(method: DescMethod, handler: UnaryHandler<DescMessage, DescMessage>, onFailure: HandlerFailureLog) {
  return (call: ServerUnaryCall<MessageShape<DescMessage>, unknown>, callback: sendUnaryData<unknown>) => {
    handler(call.request, callContext(call)).then(
      (result: Result<MessageInitShape<DescMessage>>) => {
        if (result.ok) callback(null, create(method.output, result.value));
        else callback(toGrpcStatus(result.error));
      },
      (error: unknown) => {
        onFailure(error, method.name);
        callback(internalFailure());
      },
    );
  };
}

function serverStream(
  method: DescMethod,
  handler: ServerStreamHandler<DescMessage, DescMessage>,
  onFailure: HandlerFailureLog,
) {
  return async (call: ServerWritableStream<MessageShape<DescMessage>, unknown>) => {
    const context = callContext(call);
    try {
      for await (const item of handler(call.request, context)) {
        if (context.signal.aborted) return;
        if (!item.ok) {
          call.emit('error', toGrpcStatus(item.error));
          return;
        }
        if (!call.write(create(method.output, item.value))) {
          await Promise.race([once(call, 'drain'), once(context.signal, 'abort')]);
        }
      }
      if (!context.signal.aborted) call.end();
    } catch (error) {
      onFailure(error, method.name);
      if (!context.signal.aborted) call.emit('error', internalFailure());
    }
  };
}

/** Binds typed handlers to a generated service. */
export function registration<M extends GenServiceMethods>(
  service: GenService<M>,
  handlers: ServiceHandlers<M>,
): ServiceRegistration {
  return {
    service,
    implementation: (onFailure) => {
      const implementation: UntypedServiceImplementation = {};
      const byName = handlers as Record<string, unknown>;
      for (const method of service.methods) {
        const handler = byName[method.localName];
        if (typeof handler !== 'function') continue;
        if (method.methodKind === 'unary') {
          implementation[method.localName] = unary(
            method,
            handler as UnaryHandler<DescMessage, DescMessage>,
            onFailure,
          ) as handleUnaryCall<unknown, unknown>;
        } else if (method.methodKind === 'server_streaming') {
          implementation[method.localName] = serverStream(
            method,
            handler as ServerStreamHandler<DescMessage, DescMessage>,
            onFailure,
          ) as handleServerStreamingCall<unknown, unknown>;
        }
      }
      return implementation;
    },
  };
}

export interface GrpcServerOptions {
  host: string;
  port: number;
  services: ServiceRegistration[];
  onHandlerFailure: HandlerFailureLog;
}

export interface RunningGrpcServer {
  port: number;
  /** Marks the process ready or not in grpc.health.v1 (the empty service name). */
  setServing(serving: boolean): void;
  /** Stops accepting calls, lets running ones finish for up to graceMs, then cuts them. */
  shutdown(graceMs: number): Promise<void>;
}

export async function startGrpcServer(options: GrpcServerOptions): Promise<RunningGrpcServer> {
  const server = new Server({ 'grpc.keepalive_permit_without_calls': 1 });
  const health = new HealthImplementation({ '': 'NOT_SERVING' });
  health.addToServer(server);
  for (const { service, implementation } of options.services) {
    server.addService(grpcServiceDefinition(service), implementation(options.onHandlerFailure));
    health.setStatus(service.typeName, 'SERVING');
  }
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${options.host}:${options.port}`, ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    );
  });
  return {
    port,
    setServing: (serving) => health.setStatus('', serving ? 'SERVING' : 'NOT_SERVING'),
    shutdown: async (graceMs) => {
      health.setStatus('', 'NOT_SERVING');
      const timer = setTimeout(() => server.forceShutdown(), graceMs);
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      clearTimeout(timer);
    },
  };
}
