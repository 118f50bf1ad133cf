import { Client, Metadata, status as GrpcStatus } from '@grpc/grpc-js';
import type { ClientDuplexStream, MethodDefinition, StatusObject } from '@grpc/grpc-js';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import type { DescMessage, DescMethod, MessageShape } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import { commonv1 } from '@gw/proto';
import { traceparentOf } from '@gw/telemetry';
import { err, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { channelOptions, unaryDeadline } from './client';
import type { ClientOptions } from './client';
import { grpcServiceDefinition } from './definition';
import { fromGrpcError, gatewayErrorOf } from './error-detail';
import { isMultiplexedStream, maxTimerMs } from './multiplexed';
import { wellFormedRequestId } from './request-id';
import { channelCredentials } from './transport';
import type { CallOptions, UnaryCall } from './types';

export interface MultiplexedClientOptions extends ClientOptions {
  /**
   * Calls awaiting their replies at most (default 4096); one more fails at once with overloaded_error,
   * so a service that stops answering cannot make the caller hold ever more.
   */
  maxPendingCalls?: number;
}

/** The unary methods of a service, called over its multiplexed stream. */
export type MultiplexedClient<M extends GenServiceMethods> = {
  [K in keyof M as M[K]['methodKind'] extends 'unary' ? K : never]: M[K] extends { input: infer I; output: infer O }
    ? I extends DescMessage
      ? O extends DescMessage
        ? UnaryCall<I, O>
        : never
      : never
    : never;
} & {
  /** Closes the caller's side (the service still answers what it holds), then the channel. */
  close(): void;
};

/** Names the service's methods when it has no multiplexed stream, making the call a type error. */
type WithMultiplexedStream<M extends GenServiceMethods> = [
  {
    [K in keyof M]: M[K] extends { methodKind: 'bidi_streaming'; input: typeof commonv1.MultiplexedCallSchema }
      ? K
      : never;
  }[keyof M],
] extends [never]
  ? { serviceWithoutMultiplexedCallsStream: never }
  : unknown;

export const defaultMaxPendingCalls = 4096;

type CallStream = ClientDuplexStream<commonv1.MultiplexedCall, commonv1.MultiplexedReply>;

interface PendingCall {
  method: DescMethod;
  /** Kept to send it again when a draining service ends the stream before taking it in. */
  frame: commonv1.MultiplexedCall;
  sentAgain: boolean;
  deadline: NodeJS.Timeout;
  signal: AbortSignal | undefined;
  cancel: () => void;
  resolve: (result: Result<MessageShape<DescMessage>>) => void;
}

/** One stream per client, opened when a call needs it, carrying every call in flight. */
class CallMultiplexer {
  private stream: CallStream | undefined;
  private readonly pending = new Map<number, PendingCall>();
  private nextCallId = 1;
  private closed = false;
  private readonly maxPendingCalls: number;

  constructor(
    private readonly channel: Client,
    private readonly definition: MethodDefinition<commonv1.MultiplexedCall, commonv1.MultiplexedReply>,
    private readonly options: MultiplexedClientOptions,
  ) {
    this.maxPendingCalls = options.maxPendingCalls ?? defaultMaxPendingCalls;
  }

  call(method: DescMethod, request: unknown, callOptions: CallOptions | undefined) {
    const signal = callOptions?.signal;
    // The same failures a unary call gets: cancelled before sending, and a channel that is gone or full.
    if (signal?.aborted) return Promise.resolve(this.failure(GrpcStatus.CANCELLED));
    if (this.closed) return Promise.resolve(this.failure(GrpcStatus.UNAVAILABLE));
    if (this.pending.size >= this.maxPendingCalls) return Promise.resolve(this.failure(GrpcStatus.RESOURCE_EXHAUSTED));
    const callId = this.nextCallId;
    this.nextCallId += 1;
    const now = Date.now();
    const timeoutMs = Math.min(
      unaryDeadline(callOptions, this.options.defaultTimeoutMs, now).getTime() - now,
      maxTimerMs,
    );
    const frame = create(commonv1.MultiplexedCallSchema, {
      callId: BigInt(callId),
      method: method.name,
      request: toBinary(method.input, create(method.input, request as never)),
      requestId: wellFormedRequestId(callOptions?.requestId) ?? '',
      timeoutMs,
      // The calling span's context, so that the service's span of this call joins its trace.
      traceparent: traceparentOf(callOptions?.traceContext) ?? '',
    });
    return new Promise<Result<MessageShape<DescMessage>>>((resolve) => {
      const cancel = () => this.giveUp(callId, GrpcStatus.CANCELLED);
      this.pending.set(callId, {
        method,
        frame,
        sentAgain: false,
        deadline: setTimeout(() => this.giveUp(callId, GrpcStatus.DEADLINE_EXCEEDED), timeoutMs),
        signal,
        cancel,
        resolve,
      });
      signal?.addEventListener('abort', cancel, { once: true });
      this.send(frame);
    });
  }

  close(): void {
    this.closed = true;
    this.stream?.end();
    this.channel.close();
  }

  private failure(code: GrpcStatus, status?: StatusObject): Result<never> {
    return err(fromGrpcError(status ?? { code }, this.options.callee));
  }

  private send(frame: commonv1.MultiplexedCall): void {
    this.stream ??= this.open();
    this.stream.write(frame);
  }

  private open(): CallStream {
    const stream = this.channel.makeBidiStreamRequest(
      this.definition.path,
      this.definition.requestSerialize,
      this.definition.responseDeserialize,
      new Metadata(),
    );
    stream.on('data', (reply: commonv1.MultiplexedReply) => this.answer(reply));
    // A failed stream emits 'error', then 'status'; the status alone decides.
    stream.on('error', () => undefined);
    stream.on('status', (status: StatusObject) => this.streamEnded(stream, status));
    return stream;
  }

  private answer(reply: commonv1.MultiplexedReply): void {
    const callId = Number(reply.callId);
    const call = this.pending.get(callId);
    // A call given up on (deadline, abort) is answered by no one.
    if (call) this.settle(callId, this.resultOf(call.method, reply.outcome));
  }

  private resultOf(
    method: DescMethod,
    outcome: commonv1.MultiplexedReply['outcome'],
  ): Result<MessageShape<DescMessage>> {
    switch (outcome.case) {
      case 'response':
        try {
          return ok(fromBinary(method.output, outcome.value));
        } catch {
          // As grpc-js reports a unary response that does not decode.
          return this.failure(GrpcStatus.INTERNAL);
        }
      case 'error': {
        // An error type this build does not know reads as a failure of the call.
        const carried = gatewayErrorOf(outcome.value);
        return carried ? err(carried) : this.failure(GrpcStatus.UNKNOWN);
      }
      case 'status':
        return this.failure(outcome.value);
      default:
        return this.failure(GrpcStatus.INTERNAL);
    }
  }

  private streamEnded(stream: CallStream, status: StatusObject): void {
    if (this.stream === stream) this.stream = undefined;
    if (status.code !== GrpcStatus.OK) {
      // Broken: whatever was in flight fails as a unary call on a broken channel does.
      for (const callId of [...this.pending.keys()]) this.settle(callId, this.failure(status.code, status));
      return;
    }
    // Ended cleanly: the service drained, answering every call it took in. The rest never reached a
    // handler, so they go once more on a new stream (to whichever server now serves the address).
    for (const [callId, call] of [...this.pending]) {
      if (call.sentAgain || this.closed) {
        this.settle(callId, this.failure(GrpcStatus.UNAVAILABLE));
      } else {
        call.sentAgain = true;
        this.send(call.frame);
      }
    }
  }

  private giveUp(callId: number, code: GrpcStatus): void {
    if (!this.settle(callId, this.failure(code))) return;
    // The service stops the handler and sends no reply.
    this.stream?.write(create(commonv1.MultiplexedCallSchema, { callId: BigInt(callId), cancel: true }));
  }

  /** Ends a call with its result and leaves nothing behind (timer, abort listener); false if it had ended. */
  private settle(callId: number, result: Result<MessageShape<DescMessage>>): boolean {
    const call = this.pending.get(callId);
    if (!call) return false;
    this.pending.delete(callId);
    clearTimeout(call.deadline);
    call.signal?.removeEventListener('abort', call.cancel);
    call.resolve(result);
    return true;
  }
}

/**
 * A typed client of a service's unary methods, with the same calls and results as createServiceClient's,
 * that sends them all as MultiplexedCalls on one long-lived `Calls` stream: a message each way per call
 * instead of a whole call. The stream is opened by the first call and again by the first call after it
 * ended. When it breaks, every call in flight fails as it would on a broken channel (overloaded_error
 * for an unavailable service); each call keeps its own deadline and abort signal.
 */
export function createMultiplexedClient<M extends GenServiceMethods>(
  service: GenService<M> & WithMultiplexedStream<M>,
  options: MultiplexedClientOptions,
): MultiplexedClient<M> {
  const streamMethod = service.methods.find(isMultiplexedStream);
  if (!streamMethod) throw new Error(`${service.typeName} has no multiplexed Calls stream`);
  const definition = grpcServiceDefinition(service)[streamMethod.localName] as MethodDefinition<
    commonv1.MultiplexedCall,
    commonv1.MultiplexedReply
  >;
  const channel = new Client(options.address, channelCredentials(options.transport), channelOptions(options));
  const multiplexer = new CallMultiplexer(channel, definition, options);
  const client: Record<string, unknown> = { close: () => multiplexer.close() };
  for (const method of service.methods) {
    if (method.methodKind === 'unary') {
      client[method.localName] = (request: unknown, callOptions?: CallOptions) =>
        multiplexer.call(method, request, callOptions);
    }
  }
  return client as MultiplexedClient<M>;
}
