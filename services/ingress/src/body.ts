import type { IncomingMessage } from 'node:http';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';

export function tooLarge(limitBytes: number) {
  return gatewayError(
    'request_too_large',
    `The request body is larger than the limit of ${limitBytes} bytes. Split or shrink the request.`,
  );
}

/** Reads a request body up to a limit; past it, stops reading and refuses with request_too_large. */
export function readBody(request: IncomingMessage, limitBytes: number): Promise<Result<Buffer>> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const finish = (result: Result<Buffer>) => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limitBytes) {
        request.pause();
        finish(err(tooLarge(limitBytes)));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => finish(ok(Buffer.concat(chunks, received)));
    const onError = () =>
      finish(err(gatewayError('invalid_request_error', 'The request body could not be read completely.')));
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
  });
}

/** How much of a refused upload is read and thrown away before its connection is closed. */
export interface DiscardBounds {
  /** Bytes read after the refusal. */
  maxBytes: number;
  /** Time after the refusal. */
  maxMs: number;
}

export interface DiscardOutcome {
  discardedBytes: number;
  /** Why reading stopped: the body ended, the client went, or a bound was reached. */
  stoppedBy: 'end' | 'client_gone' | 'max_bytes' | 'max_ms';
}

/**
 * Reads the rest of a refused request body and drops each chunk as it arrives (nothing is kept), until
 * the body ends, the client goes or a bound is reached. A client still writing its upload reads the
 * refusal only if the connection stays open until it has finished: closing a socket with unread bytes
 * resets it, and the reset destroys the answer the client has not read yet.
 */
export function discardRestOfBody(request: IncomingMessage, bounds: DiscardBounds): Promise<DiscardOutcome> {
  return new Promise((resolve) => {
    let discardedBytes = 0;
    const stop = (stoppedBy: DiscardOutcome['stoppedBy']) => {
      clearTimeout(timer);
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onGone);
      request.off('close', onGone);
      request.pause();
      resolve({ discardedBytes, stoppedBy });
    };
    const onData = (chunk: Buffer) => {
      discardedBytes += chunk.length;
      if (discardedBytes > bounds.maxBytes) stop('max_bytes');
    };
    const onEnd = () => stop('end');
    const onGone = () => stop('client_gone');
    const timer = setTimeout(() => stop('max_ms'), bounds.maxMs);
    if (request.readableEnded) return stop('end');
    if (request.destroyed) return stop('client_gone');
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onGone);
    request.on('close', onGone);
    request.resume();
  });
}
