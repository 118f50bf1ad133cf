import type { Request, Response } from 'express';
import { errorCatalogue, errorEnvelope, retryHeaders } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import { requestLogFields } from '@gw/telemetry';
import type { Logger } from '@gw/telemetry';
import { requestTraceContext } from '../telemetry/request-tracing';
import { discardRestOfBody } from './body';
import type { DiscardBounds } from './body';

export function requestIdOf(response: Response): string {
  return response.locals.requestId as string;
}

/** The fields that tie a log line to the response's request: its id and, while traced, the span's ids. */
export function logFieldsOf(response: Response): Record<string, unknown> {
  return requestLogFields({ requestId: requestIdOf(response), traceContext: requestTraceContext(response) });
}

/** Responses refusing an upload whose rest is still being read and dropped, until that ends. */
const uploadsBeingDiscarded = new WeakMap<Response, Promise<void>>();

/** Sends an error in the spec's envelope with its status and retry headers. */
export function sendError(response: Response, error: GatewayError): void {
  if (response.headersSent) return;
  // For the edge metrics: the answer's error type, and the refusal's kind.
  response.locals.error = error;
  const envelope = JSON.stringify(errorEnvelope(error, requestIdOf(response)));
  response.status(errorCatalogue[error.type].httpStatus).set(retryHeaders(error)).type('application/json');
  const discarding = uploadsBeingDiscarded.get(response);
  if (discarding === undefined) {
    response.send(envelope);
    return;
  }
  // The answer leaves whole now; ending the response closes the connection, so that waits for the discard.
  response.set('content-length', String(Buffer.byteLength(envelope))).write(envelope);
  void discarding.then(() => response.end());
}

/**
 * Refuses a body that may still be arriving: the connection closes after the answer, but only once the
 * rest of the upload has been read and dropped (within bounds), so that a client still writing reads the
 * answer instead of a reset.
 */
export function discardBeforeClosing(
  request: Request,
  response: Response,
  options: { refusedUploadDiscard: DiscardBounds; logger: Logger },
): void {
  response.set('connection', 'close');
  const discarding = discardRestOfBody(request, options.refusedUploadDiscard).then((outcome) =>
    options.logger.debug(
      { ...logFieldsOf(response), discarded_bytes: outcome.discardedBytes, stopped_by: outcome.stoppedBy },
      'refused upload discarded',
    ),
  );
  uploadsBeingDiscarded.set(response, discarding);
}
