import { once } from 'node:events';
import { Server, ServerCredentials, status as GrpcStatus } from '@grpc/grpc-js';
import type {
  ChannelOptions,
  handleBidiStreamingCall,
  handleServerStreamingCall,
  Metadata,
  handleUnaryCall,
  sendUnaryData,
  ServerUnaryCall,
  ServerWritableStream,
  UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import type { Span } from '@opentelemetry/api';
import { create } from '@bufbuild/protobuf';
import type { DescMessage, DescMethod, DescService, MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import type { GrpcTransport } from '@gw/config';
import { gatewayError, internalErrorMessage } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import { requestLogFields, sampledTraceId } from '@gw/telemetry';
import type { Logger } from '@gw/telemetry';
import { grpcServiceDefinition } from './definition';
import { clientKeepaliveTimeMs } from './client';
import { toGrpcStatus } from './error-detail';
import { isMultiplexedStream } from './multiplexed';
import { multiplexedCalls } from './multiplexed-server';
import type { CallTarget } from './multiplexed-server';
import { requestIdMetadataKey, wellFormedRequestId } from './request-id';
import { endServerSpan, startServerSpan, traceContextOf } from './tracing';
import type { ServerCallTrace } from './tracing';
import { serverCredentials } from './transport';
import type { CallContext, ServerStreamHandler, ServiceHandlers, UnaryHandler } from './types';

/** Where a service reports a handler that threw: a bug, never a decision. */
export type HandlerFailureLog = (error: unknown, method: string, call: CallContext) => void;

/** Every service's HandlerFailureLog: an error line with the method, the request id and the call's trace ids. */
export function logHandlerFailures(logger: Logger): HandlerFailureLog {
  return (error, method, call) => logger.error({ err: error, method, ...requestLogFields(call) }, 'handler failed');
}

/** One finished call, for metrics: every call that reached a service is counted at its boundary. */
export interface FinishedCall {
  service: string;
  method: string;
  /** The gRPC status code name, e.g. OK or PERMISSION_DENIED. */
  code: string;
  durationSeconds: number;
  /** The request the call served, when the caller sent a well-formed id. */
  requestId?: string;
  /** The trace id of the call's server span when it is sampled (the exemplar of its duration). */
  traceId?: string;
}

export interface CallHooks {
  onFailure: HandlerFailureLog;
  observe: (call: FinishedCall) => void;
  /** Aborted when the server starts shutting down: a multiplexed stream answers what it holds and ends. */
  draining: AbortSignal;
  /** The server's largest message: a multiplexed call's request joined from its frames is held to it too. */
  maxMessageBytes?: number;
}

export interface ServiceRegistration {
  service: DescService;
  implementation: (hooks: CallHooks) => UntypedServiceImplementation;
}

const codeNames = Object.fromEntries(Object.entries(GrpcStatus).map(([name, code]) => [code, name])) as Record<
  number,
  string
>;

function finish(
  hooks: CallHooks,
  method: DescMethod,
  context: CallContext,
  startedAt: bigint,
  code: number,
  span?: Span,
): void {
  endServerSpan(span, code);
  hooks.observe({
    service: method.parent.typeName,
    method: method.name,
    code: codeNames[code] ?? String(code),
    durationSeconds: Number(process.hrtime.bigint() - startedAt) / 1e9,
    requestId: context.requestId,
    traceId: sampledTraceId(span),
  });
}

const internalFailure = () => toGrpcStatus(gatewayError('api_error', internalErrorMessage));

interface CancellableCall {
  metadata: Metadata;
  on(event: 'cancelled', listener: () => void): unknown;
  removeListener(event: 'cancelled', listener: () => void): unknown;
}

/**
 * The handler's view of its call, its server span (the caller's trace continued from the metadata), and
 * `settle()` for when the answer has gone: grpc-js reports every finished call as `cancelled` too, and
 * aborting then would cost an abort error (with its stack) per call for nothing.
 */
function callContext(
  call: CancellableCall,
  method: DescMethod,
): { context: CallContext; traced: ServerCallTrace; settle(): void } {
  const controller = new AbortController();
  const cancel = () => controller.abort();
  call.on('cancelled', cancel);
  const traced = startServerSpan(method, traceContextOf(call.metadata));
  const context = {
    signal: controller.signal,
    // Checked again here: not every caller is our client.
    requestId: wellFormedRequestId(call.metadata.get(requestIdMetadataKey)[0]),
    traceContext: traced.context,
  };
  return { context, traced, settle: () => call.removeListener('cancelled', cancel) };
}

function unary(method: DescMethod, handler: UnaryHandler<DescMessage, DescMessage>, hooks: CallHooks) {
  return (call: ServerUnaryCall<MessageShape<DescMessage>, unknown>, callback: sendUnaryData<unknown>) => {
    const startedAt = process.hrtime.bigint();
    const { context, traced, settle } = callContext(call, method);
    // The handler's own spans, calls and log lines join the trace through context.traceContext.
    handler(call.request, context).then(
      (result: Result<MessageInitShape<DescMessage>>) => {
        settle();
        if (result.ok) {
          callback(null, create(method.output, result.value));
          finish(hooks, method, context, startedAt, GrpcStatus.OK, traced.span);
        } else {
          const failure = toGrpcStatus(result.error);
          callback(failure);
          finish(hooks, method, context, startedAt, failure.code!, traced.span);
        }
      },
      (error: unknown) => {
        settle();
        hooks.onFailure(error, method.name, context);
        callback(internalFailure());
        finish(hooks, method, context, startedAt, GrpcStatus.INTERNAL, traced.span);
      },
    );
  };
}

function serverStream(method: DescMethod, handler: ServerStreamHandler<DescMessage, DescMessage>, hooks: CallHooks) {
  return (call: ServerWritableStream<MessageShape<DescMessage>, unknown>) => {
    const startedAt = process.hrtime.bigint();
    const { context, traced, settle } = callContext(call, method);
    return (async () => {
      let code: number = GrpcStatus.OK;
      try {
        for await (const item of handler(call.request, context)) {
          if (context.signal.aborted) break;
          if (!item.ok) {
            const failure = toGrpcStatus(item.error);
            code = failure.code!;
            call.emit('error', failure);
            return;
          }
          if (!call.write(create(method.output, item.value))) {
            await Promise.race([once(call, 'drain'), once(context.signal, 'abort')]);
          }
        }
        if (context.signal.aborted) code = GrpcStatus.CANCELLED;
        else {
          settle();
          call.end();
        }
      } catch (error) {
        hooks.onFailure(error, method.name, context);
        code = GrpcStatus.INTERNAL;
        if (!context.signal.aborted) call.emit('error', internalFailure());
      } finally {
        finish(hooks, method, context, startedAt, code, traced.span);
      }
    })();
  };
}

export interface RegistrationOptions {
  /**
   * The answer for an error a unary handler threw that is not a bug, e.g. a store that cannot be
   * reached: the call fails with it instead of api_error. Undefined: a bug, answered as one.
   */
  answerThrown?: (error: unknown) => GatewayError | undefined;
}

/** A unary handler whose thrown errors the options may turn into answers. */
function answeringThrown(
  handler: UnaryHandler<DescMessage, DescMessage>,
  answerThrown: RegistrationOptions['answerThrown'],
): UnaryHandler<DescMessage, DescMessage> {
  if (!answerThrown) return handler;
  return async (request, context) => {
    try {
      return await handler(request, context);
    } catch (error) {
      const answer = answerThrown(error);
      if (answer === undefined) throw error;
      return { ok: false, error: answer };
    }
  };
}

/** Binds typed handlers to a generated service. */
export function registration<M extends GenServiceMethods>(
  service: GenService<M>,
  handlers: ServiceHandlers<M>,
  options: RegistrationOptions = {},
): ServiceRegistration {
  return {
    service,
    implementation: (hooks) => {
      const implementation: UntypedServiceImplementation = {};
      const byName = handlers as Record<string, unknown>;
      const callTargets = new Map<string, CallTarget>();
      for (const method of service.methods) {
        if (isMultiplexedStream(method)) {
          implementation[method.localName] = multiplexedCalls(
            method,
            callTargets,
            hooks,
            finish,
          ) as handleBidiStreamingCall<unknown, unknown>;
        }
        const handler = byName[method.localName];
        if (typeof handler !== 'function') continue;
        if (method.methodKind === 'unary') {
          const unaryHandler = answeringThrown(handler as UnaryHandler<DescMessage, DescMessage>, options.answerThrown);
          callTargets.set(method.name, { kind: 'unary', method, handler: unaryHandler });
          implementation[method.localName] = unary(method, unaryHandler, hooks) as handleUnaryCall<unknown, unknown>;
        } else if (method.methodKind === 'server_streaming') {
          const streamHandler = handler as ServerStreamHandler<DescMessage, DescMessage>;
          callTargets.set(method.name, { kind: 'serverStreaming', method, handler: streamHandler });
          implementation[method.localName] = serverStream(method, streamHandler, hooks) as handleServerStreamingCall<
            unknown,
            unknown
          >;
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
  /** Told of every finished call; feeds the service's request metrics. */
  observeCall?: (call: FinishedCall) => void;
  /** Largest message received or sent, in bytes; omitted: grpc-js's defaults (4 MiB received). */
  maxMessageBytes?: number;
  /** Mutual TLS, or plaintext: from the process's configuration (readGrpcTransport), never assumed. */
  transport: GrpcTransport;
}

export interface RunningGrpcServer {
  port: number;
  /** The plaintext health-only port (GRPC_HEALTH_PORT under mutual TLS), when there is one. */
  healthPort?: number;
  /** Marks the process ready or not in grpc.health.v1 (the empty service name). */
  setServing(serving: boolean): void;
  /** Stops accepting calls, lets running ones finish for up to graceMs, then cuts them. */
  shutdown(graceMs: number): Promise<void>;
}

/** The grpc-js options of a server: keepalive, the ping policy it states, and message limits. */
export function serverOptions(options: Pick<GrpcServerOptions, 'maxMessageBytes'>): ChannelOptions {
  return {
    // Server pings: a caller that vanished without closing its connection (its streams with it) is
    // noticed within 40 s, and the handlers of its calls are cancelled.
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
    // The ping policy for clients. grpc-js servers enforce none today, but a server that did with the
    // usual 5-minute default would answer our clients' keepalive pings with GOAWAY too_many_pings.
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.http2.min_ping_interval_without_data_ms': clientKeepaliveTimeMs / 3,
    ...(options.maxMessageBytes !== undefined && {
      'grpc.max_receive_message_length': options.maxMessageBytes,
      'grpc.max_send_message_length': options.maxMessageBytes,
    }),
  };
}

function bind(server: Server, address: string, credentials: ServerCredentials): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.bindAsync(address, credentials, (error, bound) => (error ? reject(error) : resolve(bound)));
  });
}

/**
 * Under mutual TLS with a health port: a plaintext server answering only grpc.health.v1.Health, from
 * the same statuses as the main port. The kubelet's gRPC probes cannot present a client certificate, so
 * they would be refused at the main port's handshake; health statuses are all this port tells anyone.
 */
async function startHealthServer(
  host: string,
  transport: GrpcTransport,
  health: HealthImplementation,
): Promise<{ server: Server; port: number } | undefined> {
  if (transport.kind !== 'mutualTls' || transport.healthPort === undefined) return undefined;
  const server = new Server();
  health.addToServer(server);
  const port = await bind(server, `${host}:${transport.healthPort}`, ServerCredentials.createInsecure());
  return { server, port };
}

export async function startGrpcServer(options: GrpcServerOptions): Promise<RunningGrpcServer> {
  const server = new Server(serverOptions(options));
  const health = new HealthImplementation({ '': 'NOT_SERVING' });
  health.addToServer(server);
  const draining = new AbortController();
  for (const { service, implementation } of options.services) {
    server.addService(
      grpcServiceDefinition(service),
      implementation({
        onFailure: options.onHandlerFailure,
        observe: options.observeCall ?? (() => undefined),
        draining: draining.signal,
        maxMessageBytes: options.maxMessageBytes,
      }),
    );
    health.setStatus(service.typeName, 'SERVING');
  }
  const port = await bind(server, `${options.host}:${options.port}`, serverCredentials(options.transport));
  const healthServer = await startHealthServer(options.host, options.transport, health);
  return {
    port,
    healthPort: healthServer?.port,
    setServing: (serving) => health.setStatus('', serving ? 'SERVING' : 'NOT_SERVING'),
    shutdown: async (graceMs) => {
      health.setStatus('', 'NOT_SERVING');
      draining.abort();
      const timer = setTimeout(() => server.forceShutdown(), graceMs);
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      clearTimeout(timer);
      // Probes keep getting NOT_SERVING until the calls drained, then the port goes too.
      healthServer?.server.forceShutdown();
    },
  };
}
