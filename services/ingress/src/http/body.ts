import type { IncomingMessage } from 'node:http';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { tooManyBodies } from '@gw/workers';
import type { BodyReservation } from '@gw/workers';

export function tooLarge(limitBytes: number) {
  return gatewayError(
    'request_too_large',
    `The request body is larger than the limit of ${limitBytes} bytes. Split or shrink the request.`,
  );
}

/** How long receiving one request body may take; the response that follows is not bounded. */
export interface BodyTimeouts {
  /** Longest pause between two pieces of the body. */
  idleMs: number;
  /** Longest time from the start of reading to the end of the body. */
  totalMs: number;
}

const unreadable = () => gatewayError('invalid_request_error', 'The request body could not be read completely.');

const seconds = (ms: number) => `${ms / 1000} s`;

export function tooSlow(why: string) {
  return gatewayError('invalid_request_error', `The request body arrived too slowly: ${why}. Send it without pauses.`);
}

export interface BodyReading {
  limitBytes: number;
  timeouts: BodyTimeouts;
  /** Where the body's bytes are counted: the declared length at once, else each piece as it arrives. */
  reservation: BodyReservation;
}

/**
 * Reads a request body whole, refusing it (and reading no further) when it passes the limit (413), when
 * the process holds too many bodies to take this one (503), or when it arrives too slowly: a pause over
 * `idleMs` or a body unfinished after `totalMs` (400). A refusal gives back what the body had reserved.
 */
export function readBody(request: IncomingMessage, reading: BodyReading): Promise<Result<Buffer>> {
  const { limitBytes, timeouts, reservation } = reading;
  // Node has checked the header: a body never runs past its declared length.
  const declared = request.headers['content-length'];
  const lengthKnown = declared !== undefined;
  if (lengthKnown && Number(declared) > limitBytes) return Promise.resolve(err(tooLarge(limitBytes)));
  if (request.destroyed) return Promise.resolve(err(unreadable()));
  if (lengthKnown && !reservation.take(Number(declared))) return Promise.resolve(err(tooManyBodies()));
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const finish = (result: Result<Buffer>) => {
      clearTimeout(idle);
      clearTimeout(whole);
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onGone);
      request.off('close', onGone);
      if (!result.ok) {
        request.pause();
        reservation.release();
      }
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      idle.refresh();
      received += chunk.length;
      if (received > limitBytes) return finish(err(tooLarge(limitBytes)));
      if (!lengthKnown && !reservation.take(chunk.length)) return finish(err(tooManyBodies()));
      chunks.push(chunk);
    };
    const onEnd = () => finish(ok(Buffer.concat(chunks, received)));
    const onGone = () => finish(err(unreadable()));
    const idle = setTimeout(() => finish(err(tooSlow(`nothing for ${seconds(timeouts.idleMs)}`))), timeouts.idleMs);
    const whole = setTimeout(
      () => finish(err(tooSlow(`not complete within ${seconds(timeouts.totalMs)}`))),
      timeouts.totalMs,
    );
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onGone);
    request.on('close', onGone);
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
