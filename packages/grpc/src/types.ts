import type { DescMessage, MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import type { Context } from '@opentelemetry/api';
import type { Result } from '@gw/errors';

export type MethodsOf<S> = S extends GenService<infer M> ? M : never;

/** What a handler learns about its call besides the request. */
export interface CallContext {
  /** Aborted when the caller cancels or the deadline passes. */
  signal: AbortSignal;
  /** The request the call serves, when the caller sent a well-formed id; for log lines (`request_id`). */
  requestId?: string;
  /**
   * The call's server span, while tracing is on: passed on (in `CallOptions`, to `traceLogFields`) so that
   * the handler's own spans, calls and log lines join the caller's trace.
   */
  traceContext?: Context;
}

export type UnaryHandler<I extends DescMessage, O extends DescMessage> = (
  request: MessageShape<I>,
  context: CallContext,
) => Promise<Result<MessageInitShape<O>>>;

/**
 * A server-streaming handler yields responses; a failure is yielded as a value and ends the stream.
 */
export type ServerStreamHandler<I extends DescMessage, O extends DescMessage> = (
  request: MessageShape<I>,
  context: CallContext,
) => AsyncIterable<Result<MessageInitShape<O>>>;

/**
 * The methods handlers implement and clients call one by one: unary and server-streaming. A bidi stream
 * is left out: `registration` serves the multiplexed `Calls` stream from the unary handlers.
 */
type OwnMethod<M extends GenServiceMethods, K extends keyof M> = M[K]['methodKind'] extends 'unary' | 'server_streaming'
  ? K
  : never;

export type ServiceHandlers<M extends GenServiceMethods> = {
  [K in keyof M as OwnMethod<M, K>]: M[K] extends { methodKind: 'unary'; input: infer I; output: infer O }
    ? I extends DescMessage
      ? O extends DescMessage
        ? UnaryHandler<I, O>
        : never
      : never
    : M[K] extends { methodKind: 'server_streaming'; input: infer I; output: infer O }
      ? I extends DescMessage
        ? O extends DescMessage
          ? ServerStreamHandler<I, O>
          : never
        : never
      : never;
};

export interface CallOptions {
  /**
   * Deadline for the whole call, in milliseconds from now. A unary call always has one: without a
   * positive value here, the client's default applies. A server-streaming call has one only if given here.
   */
  timeoutMs?: number;
  /** Cancels the call when aborted; an already-aborted signal fails the call without sending it. */
  signal?: AbortSignal;
  /** The request the call serves, sent as x-request-id; dropped unless at most 64 of [A-Za-z0-9_-]. */
  requestId?: string;
  /** The calling span's context, sent as W3C trace context (tracing on): the callee's span joins its trace. */
  traceContext?: Context;
}

export type UnaryCall<I extends DescMessage, O extends DescMessage> = (
  request: MessageInitShape<I>,
  options?: CallOptions,
) => Promise<Result<MessageShape<O>>>;

export type ServerStreamCall<I extends DescMessage, O extends DescMessage> = (
  request: MessageInitShape<I>,
  options?: CallOptions,
) => AsyncIterable<Result<MessageShape<O>>>;

export type ServiceClient<M extends GenServiceMethods> = {
  [K in keyof M as OwnMethod<M, K>]: M[K] extends { methodKind: 'unary'; input: infer I; output: infer O }
    ? I extends DescMessage
      ? O extends DescMessage
        ? UnaryCall<I, O>
        : never
      : never
    : M[K] extends { methodKind: 'server_streaming'; input: infer I; output: infer O }
      ? I extends DescMessage
        ? O extends DescMessage
          ? ServerStreamCall<I, O>
          : never
        : never
      : never;
};
