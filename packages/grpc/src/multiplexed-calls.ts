import { status as GrpcStatus } from '@grpc/grpc-js';
import type { StatusObject } from '@grpc/grpc-js';
import { create, fromBinary } from '@bufbuild/protobuf';
import type { DescMessage, DescMethod, MessageShape } from '@bufbuild/protobuf';
import { commonv1 } from '@gw/proto';
import { err, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { fromGrpcError, gatewayErrorOf } from './error-detail';
import { Assembly, chunksOf, maxTimerMs } from './multiplexed';

type Frame = commonv1.MultiplexedCall;
type Reply = commonv1.MultiplexedReply;
type Message = MessageShape<DescMessage>;

/** Where a call's frames go: the stream it is on now. */
export interface CallLine {
  send(call: ClientCall): void;
  /** A control frame of the call's (credit, cancel), ahead of queued frames. */
  control(frame: Frame): void;
  forget(callId: bigint): void;
}

/** What a call asks of its client: another stream when the one it was on cannot take it. */
export interface CallPlacer {
  place(call: ClientCall, afterBreak: boolean): void;
  readonly callee: string;
}

/** What a call is sent with; the first frame is made again (remaining deadline) each time it is sent. */
export interface CallRequest {
  callId: bigint;
  method: DescMethod;
  requestBytes: Uint8Array;
  requestId: string;
  traceparent: string;
  /** When the call must have ended (epoch ms); undefined: no deadline. */
  deadline: number | undefined;
  /** Reply messages granted up front (server-streaming calls); 0 for unary calls. */
  window: number;
  signal: AbortSignal | undefined;
}

/** How many times a call may be placed on a stream in all (the first and the moves). */
export const maxPlacements = 3;

/**
 * One call on a multiplexed stream, from the client's side: its frames, its place, its end. A call the
 * service never answered (refused while stopping, a stream that ended or broke before any frame of it
 * came back) may be placed on another stream; one the service answered anything for may not.
 */
export abstract class ClientCall {
  answered = false;
  placements = 0;
  /** Counted among its client's pending calls until it ends. */
  counted = false;
  line: CallLine | undefined;
  protected finished = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly onAbort = () => this.giveUp(GrpcStatus.CANCELLED);

  constructor(
    readonly request: CallRequest,
    protected readonly placer: CallPlacer,
  ) {}

  get done(): boolean {
    return this.finished;
  }

  get callId(): bigint {
    return this.request.callId;
  }

  /** Starts the call's deadline and abort listener; false when it failed at once. */
  start(): boolean {
    const { signal, deadline } = this.request;
    if (signal?.aborted) {
      this.fail(GrpcStatus.CANCELLED);
      return false;
    }
    if (deadline !== undefined) {
      const ms = Math.min(Math.max(0, deadline - Date.now()), maxTimerMs);
      this.timer = setTimeout(() => this.giveUp(GrpcStatus.DEADLINE_EXCEEDED), ms);
    }
    signal?.addEventListener('abort', this.onAbort, { once: true });
    return true;
  }

  /** The call's frames as they go now: the first with its remaining deadline, then its request's pieces. */
  frames(): Frame[] {
    const { callId, method, requestBytes, requestId, traceparent, deadline, window } = this.request;
    const pieces = chunksOf(requestBytes);
    const timeoutMs = deadline === undefined ? 0 : Math.min(Math.max(1, deadline - Date.now()), maxTimerMs);
    return pieces.map((piece, index) => {
      const partial = index < pieces.length - 1;
      return index === 0
        ? create(commonv1.MultiplexedCallSchema, {
            callId,
            method: method.name,
            request: piece,
            requestId,
            timeoutMs,
            traceparent,
            credit: window,
            partial,
            refusable: true,
          })
        : create(commonv1.MultiplexedCallSchema, { callId, request: piece, partial });
    });
  }

  /** A frame of this call's came back. */
  abstract onReply(reply: Reply): void;

  /** The service has no `Calls` stream (an older build): the call never reached a handler. */
  streamMissing = false;

  /** The stream the call was on ended without its end: refused, ended cleanly, or broken (status). */
  onLost(how: 'refused' | 'ended' | 'broken', status?: StatusObject): void {
    if (this.finished) return;
    this.line = undefined;
    if (status?.code === GrpcStatus.UNIMPLEMENTED) {
      this.streamMissing = true;
      return this.fail(GrpcStatus.UNIMPLEMENTED, status);
    }
    const movable = how === 'refused' || (!this.answered && (how === 'ended' || this.movesAfterBreak()));
    if (movable && this.placements < maxPlacements) this.placer.place(this, how === 'broken');
    else this.fail(how === 'broken' ? (status?.code ?? GrpcStatus.UNAVAILABLE) : GrpcStatus.UNAVAILABLE, status);
  }

  /** Whether a call that got nothing back may go elsewhere when its stream broke (it may run twice). */
  protected abstract movesAfterBreak(): boolean;

  /** Ends the call with a failure of the call itself (as grpc-js reports a status). */
  fail(code: number, status?: StatusObject): void {
    this.end(err(fromGrpcError(status ?? { code }, this.placer.callee)));
  }

  /** The caller stopped waiting: the call ends, and the service is told to stop its handler. */
  giveUp(code: number): void {
    if (this.finished) return;
    // Before the call ends: its end may close a draining stream's side.
    this.line?.control(create(commonv1.MultiplexedCallSchema, { callId: this.callId, cancel: true }));
    this.fail(code);
  }

  protected end(last: Result<never> | undefined): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.timer);
    this.request.signal?.removeEventListener('abort', this.onAbort);
    this.line?.forget(this.callId);
    this.line = undefined;
    this.settle(last);
  }

  /** Hands the call's last result (a failure) or its clean end (undefined) to the caller. */
  protected abstract settle(last: Result<never> | undefined): void;

  /** The failure an outcome frame carries; undefined for a clean end (status 0). */
  protected failureOf(outcome: Reply['outcome']): Result<never> | undefined {
    if (outcome.case === 'error') {
      // An error type this build does not know reads as a failure of the call.
      const carried = gatewayErrorOf(outcome.value);
      return err(carried ?? fromGrpcError({ code: GrpcStatus.UNKNOWN }, this.placer.callee));
    }
    if (outcome.case === 'status' && outcome.value === GrpcStatus.OK) return undefined;
    const code = outcome.case === 'status' ? outcome.value : GrpcStatus.INTERNAL;
    return err(fromGrpcError({ code }, this.placer.callee));
  }

  protected decode(bytes: Uint8Array): Result<Message> {
    try {
      return ok(fromBinary(this.request.method.output, bytes));
    } catch {
      // As grpc-js reports a response that does not decode.
      return err(fromGrpcError({ code: GrpcStatus.INTERNAL }, this.placer.callee));
    }
  }
}

/** A unary call: one reply (in pieces when large), its outcome. */
export class UnaryClientCall extends ClientCall {
  private assembly: Assembly | undefined;
  private resolve: (result: Result<Message>) => void = () => undefined;
  readonly result = new Promise<Result<Message>>((resolve) => {
    this.resolve = resolve;
  });

  onReply(reply: Reply): void {
    this.answered = true;
    const outcome = reply.outcome;
    if (outcome.case === 'response') {
      this.assembly ??= new Assembly();
      this.assembly.add(outcome.value);
      if (reply.partial) return;
      const result = this.decode(this.assembly.joined());
      if (result.ok) {
        this.end(undefined);
        this.resolve(result);
      } else this.end(result);
      return;
    }
    this.end(this.failureOf(outcome) ?? err(fromGrpcError({ code: GrpcStatus.INTERNAL }, this.placer.callee)));
  }

  protected movesAfterBreak(): boolean {
    // It may have run (a lease taken): as on a broken channel, it fails.
    return false;
  }

  protected settle(last: Result<never> | undefined): void {
    if (last) this.resolve(last);
  }
}

/**
 * A server-streaming call: its messages as they come, read by the caller at its own pace. The service
 * sends no more than `window` messages ahead of the caller's reading; the call grants more as they are read.
 */
export class StreamingClientCall extends ClientCall {
  private assembly: Assembly | undefined;
  private readonly queue: Result<Message>[] = [];
  private closed = false;
  private wake: (() => void) | undefined;
  private readUnGranted = 0;

  constructor(
    request: CallRequest,
    placer: CallPlacer,
    private readonly moveAfterBreak: boolean,
  ) {
    super(request, placer);
  }

  onReply(reply: Reply): void {
    this.answered = true;
    const outcome = reply.outcome;
    if (outcome.case !== 'message') return this.end(this.failureOf(outcome));
    this.assembly ??= new Assembly();
    this.assembly.add(outcome.value);
    if (reply.partial) return;
    const message = this.decode(this.assembly.joined());
    this.assembly = undefined;
    if (!message.ok) return this.giveUp(GrpcStatus.INTERNAL);
    this.push(message);
  }

  /** The caller's view: messages, then a failure as a value if the call failed. */
  async *messages(): AsyncGenerator<Result<Message>> {
    try {
      for (;;) {
        const item = this.queue.shift();
        if (item !== undefined) {
          yield item;
          if (!item.ok) return;
          this.read();
          continue;
        }
        if (this.closed) return;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
      }
    } finally {
      // The caller stopped reading early (break, return): the service stops too.
      if (!this.finished) this.giveUp(GrpcStatus.CANCELLED);
    }
  }

  protected movesAfterBreak(): boolean {
    return this.moveAfterBreak;
  }

  protected settle(last: Result<never> | undefined): void {
    if (last) this.queue.push(last);
    this.closed = true;
    this.wakeReader();
  }

  private push(item: Result<Message>): void {
    this.queue.push(item);
    this.wakeReader();
  }

  private wakeReader(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** One more message read: credit goes back in batches of half the window. */
  private read(): void {
    this.readUnGranted += 1;
    if (this.finished || this.readUnGranted < Math.max(1, this.request.window >> 1)) return;
    const credit = this.readUnGranted;
    this.readUnGranted = 0;
    this.line?.control(create(commonv1.MultiplexedCallSchema, { callId: this.callId, credit }));
  }
}
