import { status as GrpcStatus } from '@grpc/grpc-js';
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import type { DescMessage, DescMethod, MessageShape } from '@bufbuild/protobuf';
import { commonv1 } from '@gw/proto';
import type { Span } from '@opentelemetry/api';
import { contextOfTraceparent } from '@gw/telemetry';
import { errorCatalogue, gatewayError, internalErrorMessage } from '@gw/errors';
import { errorDetailOf } from './error-detail';
import { maxTimerMs } from './multiplexed';
import { wellFormedRequestId } from './request-id';
import { startServerSpan } from './tracing';
// Types only: server.ts imports this module's values.
import type { CallHooks } from './server';
import type { CallContext, UnaryHandler } from './types';

/** A unary method and its handler, as the multiplexer finds them by the method's name. */
export interface UnaryTarget {
  method: DescMethod;
  handler: UnaryHandler<DescMessage, DescMessage>;
}

/** How the server reports a finished call (server.ts's, so both paths count alike). */
export type ReportFinished = (
  hooks: CallHooks,
  method: DescMethod,
  context: CallContext,
  startedAt: bigint,
  code: number,
  span?: Span,
) => void;

/**
 * Calls one stream holds at once, from receipt until their replies are handed to HTTP/2. Beyond it
 * the stream stops reading, and HTTP/2 flow control holds the caller back.
 */
export const maxCallsInFlightPerStream = 1024;

type Outcome = commonv1.MultiplexedReply['outcome'];

const bareFailure = (code: GrpcStatus): Outcome => ({ case: 'status', value: code });

async function outcomeOf(
  target: UnaryTarget,
  request: MessageShape<DescMessage>,
  context: CallContext,
  hooks: CallHooks,
): Promise<{ outcome: Outcome; code: number }> {
  try {
    const result = await target.handler(request, context);
    if (!result.ok) {
      return {
        outcome: { case: 'error', value: errorDetailOf(result.error) },
        code: errorCatalogue[result.error.type].grpcCode,
      };
    }
    const response = toBinary(target.method.output, create(target.method.output, result.value));
    return { outcome: { case: 'response', value: response }, code: GrpcStatus.OK };
  } catch (error) {
    hooks.onFailure(error, target.method.name, context);
    return {
      outcome: { case: 'error', value: errorDetailOf(gatewayError('api_error', internalErrorMessage)) },
      code: GrpcStatus.INTERNAL,
    };
  }
}

/**
 * Serves a `Calls` stream: each MultiplexedCall goes to the unary handler its method names, concurrently,
 * and its reply is written when the handler finishes. A call that fails (unknown method, a request that
 * does not decode, a handler that throws) is a failed reply for that call only; the stream goes on until
 * the caller closes its side, goes away, or the server drains (then it answers what it took in and ends,
 * and the caller sends what it did not take in again on its next stream).
 */
export function multiplexedCalls(
  streamMethod: DescMethod,
  targets: ReadonlyMap<string, UnaryTarget>,
  hooks: CallHooks,
  reportFinished: ReportFinished,
) {
  // One listener for every open stream: a listener each would trip Node's leak warning past ten callers.
  const openStreams = new Set<() => void>();
  hooks.draining.addEventListener('abort', () => openStreams.forEach((stopAccepting) => stopAccepting()), {
    once: true,
  });

  return (stream: ServerDuplexStream<commonv1.MultiplexedCall, commonv1.MultiplexedReply>) => {
    const streamStartedAt = process.hrtime.bigint();
    const streamCancelled = new AbortController();
    const streamContext: CallContext = { signal: streamCancelled.signal };
    const running = new Map<bigint, AbortController>();
    let inFlight = 0;
    // False once the caller closed its side or the server drains: later calls are not taken in.
    let accepting = true;
    // True once the stream's end is reported: nothing more is written.
    let finished = false;

    const steer = () => {
      if (finished) return;
      if (inFlight >= maxCallsInFlightPerStream) stream.pause();
      else stream.resume();
    };
    const landed = () => {
      inFlight -= 1;
      steer();
    };
    const endWhenIdle = () => {
      if (accepting || running.size > 0 || finished) return;
      finished = true;
      stream.end();
      reportFinished(hooks, streamMethod, streamContext, streamStartedAt, GrpcStatus.OK);
    };
    const reply = (callId: bigint, outcome: Outcome | undefined) => {
      if (outcome === undefined || finished) landed();
      else stream.write(create(commonv1.MultiplexedReplySchema, { callId, outcome }), landed);
    };

    const dispatch = (call: commonv1.MultiplexedCall) => {
      inFlight += 1;
      steer();
      const target = targets.get(call.method);
      if (!target) return reply(call.callId, bareFailure(GrpcStatus.UNIMPLEMENTED));
      if (running.has(call.callId)) return reply(call.callId, bareFailure(GrpcStatus.ALREADY_EXISTS));
      let request: MessageShape<DescMessage>;
      try {
        request = fromBinary(target.method.input, call.request);
      } catch {
        return reply(call.callId, bareFailure(GrpcStatus.INTERNAL));
      }
      const controller = new AbortController();
      running.set(call.callId, controller);
      const deadline =
        call.timeoutMs > 0 ? setTimeout(() => controller.abort(), Math.min(call.timeoutMs, maxTimerMs)) : undefined;
      const startedAt = process.hrtime.bigint();
      // Each call is a span of its own under the caller's, from the traceparent its frame carries.
      const traced = startServerSpan(target.method, contextOfTraceparent(call.traceparent));
      const context: CallContext = {
        signal: controller.signal,
        requestId: wellFormedRequestId(call.requestId),
        traceContext: traced.context,
      };
      void outcomeOf(target, request, context, hooks).then(({ outcome, code }) => {
        clearTimeout(deadline);
        running.delete(call.callId);
        reportFinished(hooks, target.method, context, startedAt, code, traced.span);
        // A caller that cancelled or passed its deadline no longer waits for the reply.
        reply(call.callId, controller.signal.aborted ? undefined : outcome);
        endWhenIdle();
      });
    };

    const stopAccepting = () => {
      accepting = false;
      endWhenIdle();
    };
    openStreams.add(stopAccepting);
    stream.on('close', () => openStreams.delete(stopAccepting));
    stream.on('data', (call: commonv1.MultiplexedCall) => {
      if (!accepting) return;
      if (call.cancel) running.get(call.callId)?.abort();
      else dispatch(call);
    });
    stream.on('end', stopAccepting);
    stream.on('cancelled', () => {
      accepting = false;
      if (finished) return;
      finished = true;
      streamCancelled.abort();
      for (const controller of running.values()) controller.abort();
      reportFinished(hooks, streamMethod, streamContext, streamStartedAt, GrpcStatus.CANCELLED);
    });
    if (hooks.draining.aborted) stopAccepting();
  };
}
