import type { NextFunction, Request, Response } from 'express';
import { gatewayError, internalErrorMessage, quoted } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import { newRequestId } from '@gw/ids';
import { sampledTraceIdOf } from '@gw/telemetry';
import type { Logger } from '@gw/telemetry';
import type { CallerRequest } from '../pipeline/types';
import { routeOf } from '../telemetry/edge-metrics';
import type { EdgeMetrics } from '../telemetry/edge-metrics';
import type { RefusalCounts } from '../telemetry/refusal-counts';
import { requestTraceContext } from '../telemetry/request-tracing';
import { tooLarge } from './body';
import type { DiscardBounds } from './body';
import { repeatedCredentialHeader } from './credentials';
import { discardBeforeClosing, logFieldsOf, sendError } from './send-error';

/** Every response carries the request id, in the header the SDKs read and in x-request-id. */
export function assignRequestId(_request: Request, response: Response, next: NextFunction): void {
  const requestId = newRequestId();
  response.locals.requestId = requestId;
  response.set({ 'x-request-id': requestId, 'request-id': requestId });
  next();
}

/** The path is caller text: quoted and cut like any other echoed value. */
export function unknownEndpoint(request: Request): GatewayError {
  return gatewayError('not_found_error', `Unknown endpoint: ${request.method.slice(0, 16)} ${quoted(request.path)}.`);
}

export function notFound(request: Request, response: Response): void {
  sendError(response, unknownEndpoint(request));
}

/** Status of a request whose client left before any answer (nginx's convention), so that it is not taken for a 200. */
const clientClosedStatus = 499;
/** The error type of a response cut before its end (the client left mid-stream): not a success. */
const clientClosedType = 'client_closed';

/** Counts and times every public request at the edge, however it ends: answered, refused, or the client gone. */
export function observeRequests(metrics: EdgeMetrics, refusals: Pick<RefusalCounts, 'refused'> | undefined) {
  return (request: Request, response: Response, next: NextFunction) => {
    const route = routeOf(request.path);
    const startedAt = performance.now();
    metrics.requestStarted(route);
    response.once('close', () => {
      const error = response.locals.error as GatewayError | undefined;
      if (error) metrics.refused(error);
      if (error) refusals?.refused(response.locals.caller as CallerRequest | undefined, error);
      metrics.requestFinished({
        route,
        method: request.method,
        status: response.headersSent ? response.statusCode : clientClosedStatus,
        errorType:
          (response.locals.streamErrorType as string | undefined) ??
          error?.type ??
          (response.writableFinished ? 'none' : clientClosedType),
        streamed: String(response.getHeader('content-type')).startsWith('text/event-stream'),
        seconds: (performance.now() - startedAt) / 1000,
        caller: response.locals.caller as CallerRequest | undefined,
        traceId: sampledTraceIdOf(requestTraceContext(response)),
      });
    });
    next();
  };
}

export function internalError(logger: Logger) {
  return (error: unknown, _request: Request, response: Response, _next: NextFunction) => {
    const parseFailure = (error as { type?: string }).type === 'entity.parse.failed';
    if (parseFailure)
      return sendError(response, gatewayError('invalid_request_error', 'The request body is not valid JSON.'));
    logger.error({ err: error, ...logFieldsOf(response) }, 'unhandled error');
    sendError(response, gatewayError('api_error', internalErrorMessage));
  };
}

/** How the prechecks refuse an upload: its rest is read and dropped within bounds. */
export interface PrecheckOptions {
  bodyLimitBytes: number;
  refusedUploadDiscard: DiscardBounds;
  logger: Logger;
}

/**
 * Two keys in one request (two Authorization or two x-api-key headers) are refused as ambiguous (401),
 * before anything else: Node would keep the first Authorization and join the x-api-key values, so the
 * gateway would otherwise pick one for the caller.
 */
export function credentialsPrecheck(options: PrecheckOptions) {
  return (request: Request, response: Response, next: NextFunction) => {
    const repeated = repeatedCredentialHeader(request.headersDistinct);
    if (repeated === undefined) return next();
    discardBeforeClosing(request, response, options);
    sendError(
      response,
      gatewayError('authentication_error', `The request has more than one ${repeated} header; send one API key.`, {
        reason: 'malformed',
      }),
    );
  };
}

/**
 * The one check of the body before the key: a declared length over the gateway's limit (413, nothing
 * kept), so that no caller can make the gateway take in a body it will refuse. Everything else about the
 * body (media type included) is checked once the key is known.
 */
export function bodyPrecheck(options: PrecheckOptions) {
  return (request: Request, response: Response, next: NextFunction) => {
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > options.bodyLimitBytes) {
      discardBeforeClosing(request, response, options);
      return sendError(response, tooLarge(options.bodyLimitBytes));
    }
    next();
  };
}

/**
 * Ready to serve: `/healthz` says the process is alive, `/readyz` that it can answer requests (it has
 * policy's catalogue, which also proves policy reachable), so that no one is sent traffic it would refuse.
 */
export function readiness(ready: () => boolean) {
  return (_request: Request, response: Response) => {
    if (ready()) response.json({ status: 'ready' });
    else response.status(503).json({ status: 'starting' });
  };
}
