import type { DescMethod } from '@bufbuild/protobuf';
import { commonv1 } from '@gw/proto';

/** A service's `Calls`: a bidi stream of MultiplexedCall in, MultiplexedReply out. */
export function isMultiplexedStream(method: DescMethod): boolean {
  return (
    method.methodKind === 'bidi_streaming' &&
    method.input.typeName === commonv1.MultiplexedCallSchema.typeName &&
    method.output.typeName === commonv1.MultiplexedReplySchema.typeName
  );
}

/** setTimeout's longest delay; a longer one would fire at once. Deadlines of multiplexed calls stop here. */
export const maxTimerMs = 2 ** 31 - 1;

/**
 * Largest piece of a request or response one frame carries. A larger one goes as several frames, which
 * the outbox interleaves with other calls' frames: a 30 MiB body delays another call by a piece at most.
 */
export const frameChunkBytes = 64 * 1024;

/** The bytes in pieces of at most frameChunkBytes, as views of the same memory (no copy). */
export function chunksOf(bytes: Uint8Array): Uint8Array[] {
  if (bytes.byteLength <= frameChunkBytes) return [bytes];
  const pieces: Uint8Array[] = [];
  for (let start = 0; start < bytes.byteLength; start += frameChunkBytes) {
    pieces.push(bytes.subarray(start, start + frameChunkBytes));
  }
  return pieces;
}

/** The pieces of one request or response as they arrive, joined once the last came. */
export class Assembly {
  private readonly pieces: Uint8Array[] = [];
  bytes = 0;

  add(piece: Uint8Array): void {
    this.pieces.push(piece);
    this.bytes += piece.byteLength;
  }

  joined(): Uint8Array {
    return this.pieces.length === 1 ? this.pieces[0]! : Buffer.concat(this.pieces, this.bytes);
  }
}

interface FrameStream<F> {
  write(frame: F): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

/**
 * The frames a side of a multiplexed stream has to write: control frames (credit, cancel, drain) first,
 * then one frame per call in turn, and only while the HTTP/2 stream takes more (write() true), so that no
 * call's many frames queue ahead of the others' in grpc-js's buffers.
 */
export class FrameOutbox<F> {
  private readonly urgent: F[] = [];
  private readonly queues = new Map<bigint, F[]>();
  private readonly emptied = new Map<bigint, () => void>();
  private waitingForDrain = false;
  private closed = false;
  private onIdle: (() => void) | undefined;

  constructor(private readonly stream: FrameStream<F>) {}

  /** A control frame, ahead of every call's queued frames. */
  sendNow(frame: F): void {
    if (this.closed) return;
    this.urgent.push(frame);
    this.pump();
  }

  /** Queues a call's frames; resolves once the last is handed to the stream (or the outbox closed). */
  send(callId: bigint, frames: F[]): Promise<void> {
    if (this.closed) return Promise.resolve();
    const queue = this.queues.get(callId);
    if (queue) queue.push(...frames);
    else this.queues.set(callId, [...frames]);
    const handedOver = new Promise<void>((resolve) => {
      const earlier = this.emptied.get(callId);
      this.emptied.set(callId, () => {
        earlier?.();
        resolve();
      });
    });
    this.pump();
    return handedOver;
  }

  /** Forgets a call's frames not written yet (it was cancelled). */
  drop(callId: bigint): void {
    this.queues.delete(callId);
    this.release(callId);
  }

  get idle(): boolean {
    return this.urgent.length === 0 && this.queues.size === 0;
  }

  /** Runs `then` once every queued frame was handed to the stream (at once when none is queued). */
  whenIdle(then: () => void): void {
    if (this.idle || this.closed) then();
    else this.onIdle = then;
  }

  /** The stream ended: nothing more is written, every waiter goes on. */
  close(): void {
    this.closed = true;
    this.urgent.length = 0;
    this.queues.clear();
    for (const callId of [...this.emptied.keys()]) this.release(callId);
  }

  private release(callId: bigint): void {
    const resolve = this.emptied.get(callId);
    this.emptied.delete(callId);
    resolve?.();
  }

  private next(): F | undefined {
    const urgent = this.urgent.shift();
    if (urgent !== undefined) return urgent;
    const first = this.queues.entries().next();
    if (first.done) return undefined;
    const [callId, queue] = first.value;
    const frame = queue.shift();
    // To the back of the line: the next frame is another call's.
    this.queues.delete(callId);
    if (queue.length > 0) this.queues.set(callId, queue);
    else this.release(callId);
    return frame;
  }

  private pump(): void {
    while (!this.waitingForDrain && !this.closed) {
      const frame = this.next();
      if (frame === undefined) {
        const onIdle = this.onIdle;
        this.onIdle = undefined;
        return onIdle?.();
      }
      if (!this.stream.write(frame)) {
        this.waitingForDrain = true;
        this.stream.once('drain', () => {
          this.waitingForDrain = false;
          this.pump();
        });
      }
    }
  }
}

/**
 * Reply messages a server-streaming call may still send. Unlimited when the caller gave no credit (a
 * caller of unary calls only); otherwise taken one per message and granted again by the caller as it reads.
 */
export class Credit {
  private waiter: (() => void) | undefined;

  constructor(private available: number) {}

  grant(more: number): void {
    this.available += more;
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }

  /** Takes one; waits while there is none. False when the signal aborted first. */
  async take(signal: AbortSignal): Promise<boolean> {
    while (this.available <= 0) {
      if (signal.aborted) return false;
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener('abort', done);
          this.waiter = undefined;
          resolve();
        };
        this.waiter = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
    if (signal.aborted) return false;
    this.available -= 1;
    return true;
  }
}
