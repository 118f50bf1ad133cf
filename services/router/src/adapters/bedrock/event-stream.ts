import { EventStreamCodec } from '@smithy/core/event-streams';
import type { Message } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';

/** One decoded frame of an AWS event stream: its `:message-type`, its string headers, its payload. */
export interface EventStreamFrame {
  messageType: string;
  headers: Record<string, string>;
  payload: Uint8Array;
}

/** Why the byte stream is not an event stream: a bad prelude or frame checksum, or a frame too large. */
export class EventStreamError extends Error {}

const preludeBytes = 12;
/** Prelude (12) and message checksum (4): the smallest frame. */
const minimumFrameBytes = 16;

function stringHeaders(message: Message): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, header] of Object.entries(message.headers)) {
    if (header.type === 'string') headers[name] = header.value;
  }
  return headers;
}

/**
 * Splits an AWS event stream (`application/vnd.amazon.eventstream`) into frames as bytes arrive, in
 * pieces of any size: a frame cut across chunks is held until it is whole, and each whole one is
 * checked (both CRC32s) and decoded by Smithy's codec, the one the AWS SDKs use.
 */
export class EventStreamDecoder {
  private readonly codec = new EventStreamCodec(toUtf8, fromUtf8);
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly maxFrameBytes: number) {}

  /** The frames completed by this chunk; throws EventStreamError on a broken stream. */
  push(chunk: Uint8Array): EventStreamFrame[] {
    const incoming = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    // Copies only while a frame is split across chunks.
    this.pending = this.pending.length === 0 ? incoming : Buffer.concat([this.pending, incoming]);
    const frames: EventStreamFrame[] = [];
    while (this.pending.length >= preludeBytes) {
      const total = this.pending.readUInt32BE(0);
      if (total < minimumFrameBytes || total > this.maxFrameBytes)
        throw new EventStreamError(`event-stream frame of ${total} bytes`);
      if (this.pending.length < total) break;
      const frame = this.pending.subarray(0, total);
      this.pending = this.pending.subarray(total);
      let message: Message;
      try {
        message = this.codec.decode(frame);
      } catch (error) {
        throw new EventStreamError((error as Error).message);
      }
      const headers = stringHeaders(message);
      frames.push({ messageType: headers[':message-type'] ?? '', headers, payload: message.body });
    }
    return frames;
  }

  /** Whether bytes of an unfinished frame are left: a stream that ends now was cut. */
  get midFrame(): boolean {
    return this.pending.length > 0;
  }
}
