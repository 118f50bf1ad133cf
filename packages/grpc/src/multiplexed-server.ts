import { status as GrpcStatus } from '@grpc/grpc-js';
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import type { DescMessage, DescMethod, MessageShape } from '@bufbuild/protobuf';
import { commonv1 } from '@gw/proto';
import type { Span } from '@opentelemetry/api';
import { contextOfTraceparent } from '@gw/telemetry';
import { errorCatalogue, gatewayError, internalErrorMessage } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import { errorDetailOf } from './error-detail';
import { Assembly, chunksOf, Credit, FrameOutbox, maxTimerMs } from './multiplexed';
import { wellFormedRequestId } from './request-id';
import { startServerSpan } from './tracing';
// Types only: server.ts imports this module's values.
import type { CallHooks } from './server';
import type { CallContext, ServerStreamHandler, UnaryHandler } from './types';

/** A method and its handler, as the multiplexer finds them by the method's name. */
export type CallTarget =
  | { kind: 'unary'; method: DescMethod; handler: UnaryHandler<DescMessage, DescMessage> }
  | { kind: 'serverStreaming'; method: DescMethod; handler: ServerStreamHandler<DescMessage, DescMessage> };

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
 * Unary calls one stream holds at once, from their first frame until they end. Beyond it the stream stops
 * reading, and HTTP/2 flow control holds the caller back.
 */
export const maxCallsInFlightPerStream = 1024;

/**
 * Server-streaming calls one stream runs at once. They do not pause the stream when it is reached (their
 * credit and cancel frames must still be read, or a call waiting for credit would wait for ever): one more
 * fails alone with RESOURCE_EXHAUSTED (overloaded_error, retryable).
 */
export const maxStreamingCallsPerStream = 1024;

type Outcome = commonv1.MultiplexedReply['outcome'];
type Reply = commonv1.MultiplexedReply;

const bareFailure = (code: GrpcStatus): Outcome => ({ case: 'status', value: code });
const endedWell: Outcome = { case: 'status', value: GrpcStatus.OK };

function refusal(error: GatewayError): { outcome: Outcome; code: number } {
  return { outcome: { case: 'error', value: errorDetailOf(error) }, code: errorCatalogue[error.type].grpcCode };
}

function thrown(error: unknown, target: CallTarget, context: CallContext, hooks: CallHooks) {
  hooks.onFailure(error, target.method.name, context);
  return { ...refusal(gatewayError('api_error', internalErrorMessage)), code: GrpcStatus.INTERNAL };
}

/** A reply's frames: its bytes in pieces (all but the last `partial`), or the one frame of its outcome. */
function framesOf(callId: bigint, outcome: Outcome): Reply[] {
  if (outcome.case !== 'response' && outcome.case !== 'message') {
    return [create(commonv1.MultiplexedReplySchema, { callId, outcome })];
  }
  const pieces = chunksOf(outcome.value);
  return pieces.map((piece, index) =>
    create(commonv1.MultiplexedReplySchema, {
      callId,
      outcome: { case: outcome.case, value: piece },
      partial: index < pieces.length - 1,
    }),
  );
}

interface RunningCall {
  callId: bigint;
  controller: AbortController;
  credit: Credit;
  context: CallContext;
}

type Send = (frames: Reply[]) => Promise<void>;

async function unaryOutcome(
  target: Extract<CallTarget, { kind: 'unary' }>,
  request: MessageShape<DescMessage>,
  call: RunningCall,
  hooks: CallHooks,
): Promise<{ outcome: Outcome; code: number }> {
  try {
    const result = await target.handler(request, call.context);
    if (!result.ok) return refusal(result.error);
    const response = toBinary(target.method.output, create(target.method.output, result.value));
    return { outcome: { case: 'response', value: response }, code: GrpcStatus.OK };
  } catch (error) {
    return thrown(error, target, call.context, hooks);
  }
}

/** Sends each message the handler yields as the call's credit allows; the outcome is the call's end. */
async function streamOutcome(
  target: Extract<CallTarget, { kind: 'serverStreaming' }>,
  request: MessageShape<DescMessage>,
  call: RunningCall,
  hooks: CallHooks,
  send: Send,
): Promise<{ outcome: Outcome; code: number }> {
  const signal = call.context.signal;
  const cancelled = { outcome: bareFailure(GrpcStatus.CANCELLED), code: GrpcStatus.CANCELLED };
  try {
    for await (const item of target.handler(request, call.context)) {
      if (signal.aborted) return cancelled;
      if (!item.ok) return refusal(item.error);
      // A reader that stopped reading stops this call here, and only this call.
      if (!(await call.credit.take(signal))) return cancelled;
      const message = toBinary(target.method.output, create(target.method.output, item.value));
      await send(framesOf(call.callId, { case: 'message', value: message }));
    }
    return signal.aborted ? cancelled : { outcome: endedWell, code: GrpcStatus.OK };
  } catch (error) {
    return signal.aborted ? cancelled : thrown(error, target, call.context, hooks);
  }
}

interface StreamServing {
  targets: ReadonlyMap<string, CallTarget>;
  /** Server-streaming calls running on the stream. */
  streaming: { count: number };
  hooks: CallHooks;
  reportFinished: ReportFinished;
  outbox: FrameOutbox<Reply>;
  /** Called whenever a call ends: the stream may end or read again. */
  settled: () => void;
}

/** Runs one call taken in (its whole request arrived) to its last frame. */
function runCall(
  serving: StreamServing,
  running: Map<bigint, RunningCall>,
  frame: commonv1.MultiplexedCall,
  requestBytes: Uint8Array,
): void {
  const { targets, hooks, outbox } = serving;
  const callId = frame.callId;
  const target = targets.get(frame.method);
  const fail = (code: GrpcStatus) => void outbox.send(callId, framesOf(callId, bareFailure(code)));
  if (!target) return fail(GrpcStatus.UNIMPLEMENTED);
  if (running.has(callId)) return fail(GrpcStatus.ALREADY_EXISTS);
  const streaming = target.kind === 'serverStreaming';
  if (streaming && serving.streaming.count >= maxStreamingCallsPerStream) return fail(GrpcStatus.RESOURCE_EXHAUSTED);
  let request: MessageShape<DescMessage>;
  try {
    request = fromBinary(target.method.input, requestBytes);
  } catch {
    return fail(GrpcStatus.INTERNAL);
  }
  const controller = new AbortController();
  const deadline =
    frame.timeoutMs > 0 ? setTimeout(() => controller.abort(), Math.min(frame.timeoutMs, maxTimerMs)) : undefined;
  const startedAt = process.hrtime.bigint();
  // Each call is a span of its own under the caller's, from the traceparent its frame carries.
  const traced = startServerSpan(target.method, contextOfTraceparent(frame.traceparent));
  const call: RunningCall = {
    callId,
    controller,
    credit: new Credit(frame.credit > 0 ? frame.credit : Infinity),
    context: {
      signal: controller.signal,
      requestId: wellFormedRequestId(frame.requestId),
      traceContext: traced.context,
    },
  };
  running.set(callId, call);
  if (streaming) serving.streaming.count += 1;
  const outcome =
    target.kind === 'unary'
      ? unaryOutcome(target, request, call, hooks)
      : streamOutcome(target, request, call, hooks, (frames) => outbox.send(callId, frames));
  void outcome.then(async ({ outcome: last, code }) => {
    clearTimeout(deadline);
    serving.reportFinished(hooks, target.method, call.context, startedAt, code, traced.span);
    // A caller that cancelled or passed its deadline no longer waits for the end.
    if (!controller.signal.aborted) await outbox.send(callId, framesOf(callId, last));
    running.delete(callId);
    if (streaming) serving.streaming.count -= 1;
    serving.settled();
  });
}

/**
 * Serves a `Calls` stream: each call goes to the unary or server-streaming handler its method names,
 * concurrently, its request joined from its frames and its replies written as frames in turn with the
 * other calls'. A call that fails (unknown method, a request that does not decode or is too large, a
 * handler that throws) fails alone; the stream goes on until the caller closes its side or goes away,
 * or the server drains: then it tells the caller, refuses new calls (the caller sends them elsewhere),
 * finishes the ones it took in, and ends.
 */
export function multiplexedCalls(
  streamMethod: DescMethod,
  targets: ReadonlyMap<string, CallTarget>,
  hooks: CallHooks,
  reportFinished: ReportFinished,
) {
  // One listener for every open stream: a listener each would trip Node's leak warning past ten callers.
  const openStreams = new Set<() => void>();
  hooks.draining.addEventListener('abort', () => openStreams.forEach((drain) => drain()), { once: true });

  return (stream: ServerDuplexStream<commonv1.MultiplexedCall, Reply>) => {
    const streamStartedAt = process.hrtime.bigint();
    const streamCancelled = new AbortController();
    const streamContext: CallContext = { signal: streamCancelled.signal };
    const running = new Map<bigint, RunningCall>();
    const assembling = new Map<bigint, { first: commonv1.MultiplexedCall; assembly: Assembly }>();
    const outbox = new FrameOutbox<Reply>(stream);
    const streaming = { count: 0 };
    // False once the caller closed its side or the server drains: later calls are refused.
    let accepting = true;
    // True once the stream's end is reported: nothing more is written.
    let finished = false;

    const settled = () => {
      if (finished) return;
      const pausing = running.size - streaming.count + assembling.size >= maxCallsInFlightPerStream;
      if (pausing) stream.pause();
      else stream.resume();
      if (accepting || running.size > 0 || assembling.size > 0) return;
      if (!outbox.idle) return outbox.whenIdle(settled);
      finished = true;
      stream.end();
      reportFinished(hooks, streamMethod, streamContext, streamStartedAt, GrpcStatus.OK);
    };
    const serving: StreamServing = { targets, streaming, hooks, reportFinished, outbox, settled };
    const maxRequestBytes = hooks.maxMessageBytes ?? Infinity;

    const piece = (frame: commonv1.MultiplexedCall) => {
      const held = assembling.get(frame.callId)!;
      held.assembly.add(frame.request);
      if (held.assembly.bytes > maxRequestBytes) {
        assembling.delete(frame.callId);
        void outbox.send(frame.callId, framesOf(frame.callId, bareFailure(GrpcStatus.RESOURCE_EXHAUSTED)));
      } else if (!frame.partial) {
        assembling.delete(frame.callId);
        runCall(serving, running, held.first, held.assembly.joined());
      }
      settled();
    };
    const take = (frame: commonv1.MultiplexedCall) => {
      if (frame.partial) {
        assembling.set(frame.callId, { first: frame, assembly: new Assembly() });
        piece(frame);
      } else runCall(serving, running, frame, frame.request);
      settled();
    };
    const cancel = (callId: bigint) => {
      assembling.delete(callId);
      running.get(callId)?.controller.abort();
      outbox.drop(callId);
    };

    const drain = () => {
      if (!accepting || finished) return;
      accepting = false;
      outbox.sendNow(create(commonv1.MultiplexedReplySchema, { callId: 0n, draining: true }));
      settled();
    };
    openStreams.add(drain);
    stream.on('close', () => openStreams.delete(drain));
    stream.on('data', (frame: commonv1.MultiplexedCall) => {
      if (frame.cancel) cancel(frame.callId);
      else if (assembling.has(frame.callId)) piece(frame);
      else if (!frame.method && running.has(frame.callId)) running.get(frame.callId)!.credit.grant(frame.credit);
      else if (accepting) take(frame);
      else if (frame.refusable) {
        outbox.sendNow(create(commonv1.MultiplexedReplySchema, { callId: frame.callId, refused: true }));
      }
      // Else left unanswered: a caller of an older build sends it again once the stream ended.
    });
    stream.on('end', () => {
      accepting = false;
      settled();
    });
    stream.on('cancelled', () => {
      accepting = false;
      outbox.close();
      if (finished) return;
      finished = true;
      streamCancelled.abort();
      for (const call of running.values()) call.controller.abort();
      reportFinished(hooks, streamMethod, streamContext, streamStartedAt, GrpcStatus.CANCELLED);
    });
    if (hooks.draining.aborted) drain();
  };
}
