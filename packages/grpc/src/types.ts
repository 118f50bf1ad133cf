import type { DescMessage, MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import type { Result } from '@gw/errors';

export type MethodsOf<S> = S extends GenService<infer M> ? M : never;

/** What a handler learns about its call besides the request. */
export interface CallContext {
  /** Aborted when the caller cancels or the deadline passes. */
  signal: AbortSignal;
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

export type ServiceHandlers<M extends GenServiceMethods> = {
  [K in keyof M]: M[K] extends { methodKind: 'unary'; input: infer I; output: infer O }
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
  /** Deadline for the whole call, in milliseconds from now. */
  timeoutMs?: number;
  /** Cancels the call when aborted. */
  signal?: AbortSignal;
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
  [K in keyof M]: M[K] extends { methodKind: 'unary'; input: infer I; output: infer O }
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
