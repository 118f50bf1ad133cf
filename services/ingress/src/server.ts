import path from 'node:path';
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { errorCatalogue, errorEnvelope, gatewayError, internalErrorMessage, quoted, retryHeaders } from '@gw/errors';
import type { GatewayError, RateLimitWindow, Result } from '@gw/errors';
import { newRequestId } from '@gw/ids';
import { droppedBetasHeader, droppedBetasHeaderValue } from '@gw/catalogue';
import { sourceAddress } from '@gw/addresses';
import { requestLogFields } from '@gw/telemetry';
import type { PlanConfig } from '@gw/config';
import type { Logger } from '@gw/telemetry';
import { requireKnownHost } from './admin/host-check';
import { adminRoutes } from './admin/routes';
import type { Clients } from './clients';
import { discardRestOfBody, readBody as readRequestBody, tooLarge } from './http/body';
import type { BodyBudget } from '@gw/workers';
import type { BodyTimeouts, DiscardBounds } from './http/body';
import { presentedKey, repeatedCredentialHeader } from './http/credentials';
import { handleCountTokens } from './pipeline/count-tokens';
import { routeOf, streamErrorType } from './telemetry/edge-metrics';
import type { EdgeMetrics } from './telemetry/edge-metrics';
import { handleMessages, refuseVerified } from './pipeline/messages';
import { authenticate } from './pipeline/authenticate';
import type { CallerRequest, GatewayDeps, ResponseSink } from './pipeline/types';
import { handleGetModel, handleListModels } from './pipeline/models';
import { rateLimitHeaders } from './domain/rate-limit';
import { requestTraceContext, traceRequests } from './telemetry/request-tracing';
import type { RefusalCounts } from './telemetry/refusal-counts';
import { handleUsage, usageReportJson } from './pipeline/usage-report';
import { pingFrame, sseFrame } from './http/sse';

export interface PublicAppOptions {
  /** True once the process can answer requests (`/readyz`). */
  ready(): boolean;
  bodyLimitBytes: number;
  /** How much of a refused upload is still read (and dropped) so that its client reads the refusal. */
  refusedUploadDiscard: DiscardBounds;
  /** How long a body may pause, and take in all, while it arrives. */
  bodyTimeouts: BodyTimeouts;
  /** The bytes of bodies this process may hold at once, shared by every request. */
  bodyBudget: BodyBudget;
  /** First segment of the rate-limit header names (spec §8.1), `anthropic` by default. */
  rateLimitHeaderPrefix: string;
  ssePingIntervalMs: number;
  /** Peers whose X-Forwarded-For is believed (CIDR ranges or addresses). */
  trustedProxies: readonly string[];
  metrics: EdgeMetrics;
  logger: Logger;
  /** Counts each refusal against the key its request was verified as (usage per key). */
  refusals?: Pick<RefusalCounts, 'refused'>;
}

const protocolHeaderNames = ['anthropic-version', 'anthropic-beta'];

function requestIdOf(response: Response): string {
  return response.locals.requestId as string;
}

/** The fields that tie a log line to the response's request: its id and, while traced, the span's ids. */
function logFieldsOf(response: Response): Record<string, unknown> {
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
function discardBeforeClosing(request: Request, response: Response, options: PublicAppOptions): void {
  response.set('connection', 'close');
  const discarding = discardRestOfBody(request, options.refusedUploadDiscard).then((outcome) =>
    options.logger.debug(
      { ...logFieldsOf(response), discarded_bytes: outcome.discardedBytes, stopped_by: outcome.stoppedBy },
      'refused upload discarded',
    ),
  );
  uploadsBeingDiscarded.set(response, discarding);
}

/** The ResponseSink of one HTTP response: JSON, or an SSE stream written whole event by event. */
function responseSink(response: Response, pingIntervalMs: number, headerPrefix: string): ResponseSink {
  let ping: NodeJS.Timeout | undefined;
  const stopPing = () => clearInterval(ping);
  response.once('close', stopPing);
  return {
    setRateLimit: (window) => response.set(rateLimitHeaders(headerPrefix, window)),
    fail: (error) => sendError(response, error),
    sendJson: (body, region) => {
      if (region) response.set('x-gateway-region', region);
      response.status(200).type('application/json').send(Buffer.from(body));
    },
    startStream: (region) => {
      if (region) response.set('x-gateway-region', region);
      // No Connection header of its own: Node keeps the connection alive or closes it after the stream,
      // as the request asked (a header set here would override a client's `Connection: close`).
      response.status(200).set({
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      });
      response.flushHeaders();
      ping = setInterval(() => response.write(pingFrame), pingIntervalMs);
    },
    writeEvent: (event, data) => {
      ping?.refresh();
      if (event === 'error') response.locals.streamErrorType = streamErrorType(data);
      response.write(sseFrame(event, data));
    },
    endStream: () => {
      stopPing();
      response.end();
    },
    setPrivacyFlags: (header) => response.set('x-privacy-flags', header),
    setDroppedBetas: (names) => response.set(droppedBetasHeader, droppedBetasHeaderValue(names)),
  };
}

/** Every response carries the request id, in the header the SDKs read and in x-request-id. */
function assignRequestId(_request: Request, response: Response, next: NextFunction): void {
  const requestId = newRequestId();
  response.locals.requestId = requestId;
  response.set({ 'x-request-id': requestId, 'request-id': requestId });
  next();
}

/** The path is caller text: quoted and cut like any other echoed value. */
function unknownEndpoint(request: Request): GatewayError {
  return gatewayError('not_found_error', `Unknown endpoint: ${request.method.slice(0, 16)} ${quoted(request.path)}.`);
}

/** Status of a request whose client left before any answer (nginx's convention), so that it is not taken for a 200. */
const clientClosedStatus = 499;
/** The error type of a response cut before its end (the client left mid-stream): not a success. */
const clientClosedType = 'client_closed';

/** Counts and times every public request at the edge, however it ends: answered, refused, or the client gone. */
function observeRequests(metrics: EdgeMetrics, refusals: PublicAppOptions['refusals']) {
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
      });
    });
    next();
  };
}

function notFound(request: Request, response: Response): void {
  sendError(response, unknownEndpoint(request));
}

function internalError(logger: Logger) {
  return (error: unknown, _request: Request, response: Response, _next: NextFunction) => {
    const parseFailure = (error as { type?: string }).type === 'entity.parse.failed';
    if (parseFailure)
      return sendError(response, gatewayError('invalid_request_error', 'The request body is not valid JSON.'));
    logger.error({ err: error, ...logFieldsOf(response) }, 'unhandled error');
    sendError(response, gatewayError('api_error', internalErrorMessage));
  };
}

/** The query string of a request target, without its `?`; its length is bounded by the request head's. */
function queryOf(target: string): string {
  const start = target.indexOf('?');
  return start < 0 ? '' : target.slice(start + 1);
}

/** Builds the CallerRequest of an HTTP request: id, key, source address, body reader, protocol headers. */
function callerRequest(request: Request, response: Response, options: PublicAppOptions): CallerRequest {
  const disconnected = new AbortController();
  response.once('close', () => {
    if (!response.writableFinished) disconnected.abort();
  });
  let bodyRead: Promise<Result<Buffer>> | undefined;
  // Read once; a second caller (the check that the upload has arrived, then admission) shares the read.
  const readBody = (limitBytes: number) =>
    (bodyRead ??= (async () => {
      const reservation = options.bodyBudget.reservation();
      // The body is in use until the response is over, however it ends (the client may go first).
      response.once('close', reservation.release);
      const body = await readRequestBody(request, { limitBytes, timeouts: options.bodyTimeouts, reservation });
      if (!body.ok) discardBeforeClosing(request, response, options);
      return body;
    })());
  const protocolHeaders: Record<string, string> = {};
  for (const name of protocolHeaderNames) {
    const value = request.headers[name];
    if (value !== undefined) protocolHeaders[name] = Array.isArray(value) ? value.join(',') : value;
  }
  // Kept for the refusal counts, which look up the key it was verified as when the response ends.
  const caller: CallerRequest = {
    requestId: requestIdOf(response),
    traceContext: requestTraceContext(response),
    presentedKey: presentedKey(request.headers.authorization, request.headers['x-api-key']),
    sourceAddress: sourceAddress(
      request.socket.remoteAddress ?? '',
      request.headers['x-forwarded-for'] as string | undefined,
      options.trustedProxies,
    ),
    readBody,
    bodyArrived: async (limitBytes) => {
      const read = readBody(limitBytes).then(() => true);
      // setImmediate runs after this turn's I/O: whatever of the upload the socket held has been parsed.
      return Promise.race([read, new Promise<boolean>((resolve) => setImmediate(resolve, false))]);
    },
    contentType: request.headers['content-type'],
    discardBody: () => discardBeforeClosing(request, response, options),
    protocolHeaders,
    query: queryOf(request.originalUrl),
    signal: disconnected.signal,
  };
  response.locals.caller = caller;
  return caller;
}

/**
 * Two keys in one request (two Authorization or two x-api-key headers) are refused as ambiguous (401),
 * before anything else: Node would keep the first Authorization and join the x-api-key values, so the
 * gateway would otherwise pick one for the caller.
 */
function credentialsPrecheck(options: PublicAppOptions) {
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
function bodyPrecheck(options: PublicAppOptions) {
  return (request: Request, response: Response, next: NextFunction) => {
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > options.bodyLimitBytes) {
      discardBeforeClosing(request, response, options);
      return sendError(response, tooLarge(options.bodyLimitBytes));
    }
    next();
  };
}

export function createPublicApp(deps: GatewayDeps, options: PublicAppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(assignRequestId);

  const failed = (response: Response) => (error: unknown) => {
    options.logger.error({ err: error, ...logFieldsOf(response) }, 'request failed');
    if (response.headersSent) response.end();
    else sendError(response, gatewayError('api_error', internalErrorMessage));
  };
  const setRateLimit = (response: Response) => (window: RateLimitWindow) =>
    response.set(rateLimitHeaders(options.rateLimitHeaderPrefix, window));
  const respond = (response: Response) => (result: Result<unknown>) => {
    if (result.ok) response.status(200).json(result.value);
    else sendError(response, result.error);
  };

  app.get('/healthz', (_request, response) => {
    response.json({ status: 'ok' });
  });
  app.get('/readyz', readiness(options.ready));
  app.use(traceRequests(options.trustedProxies));
  app.use(observeRequests(options.metrics, options.refusals));
  app.use(credentialsPrecheck(options));

  app.post('/v1/messages', bodyPrecheck(options), (request: Request, response: Response) => {
    handleMessages(
      deps,
      callerRequest(request, response, options),
      responseSink(response, options.ssePingIntervalMs, options.rateLimitHeaderPrefix),
    ).catch(failed(response));
  });

  app.post('/v1/messages/count_tokens', bodyPrecheck(options), (request: Request, response: Response) => {
    handleCountTokens(deps, callerRequest(request, response, options), setRateLimit(response)).then(
      respond(response),
      failed(response),
    );
  });

  app.get('/v1/usage', (request: Request, response: Response) => {
    handleUsage(deps, callerRequest(request, response, options), setRateLimit(response)).then((result) => {
      if (result.ok) response.status(200).type('application/json').send(usageReportJson(result.value));
      else sendError(response, result.error);
    }, failed(response));
  });

  app.get('/v1/models', (request: Request, response: Response) => {
    handleListModels(deps, callerRequest(request, response, options), request.query, setRateLimit(response)).then(
      respond(response),
      failed(response),
    );
  });

  app.get('/v1/models/:id', (request: Request, response: Response) => {
    handleGetModel(
      deps,
      callerRequest(request, response, options),
      String(request.params.id),
      setRateLimit(response),
    ).then(respond(response), failed(response));
  });
  // An id that is not percent-encoded UTF-8 fails in the router, before any handler: a refusal, not a fault.
  app.use('/v1/models', (error: unknown, _request: Request, response: Response, next: NextFunction) => {
    if (!(error instanceof URIError)) return next(error);
    sendError(response, gatewayError('invalid_request_error', 'The path is not valid percent-encoded UTF-8.'));
  });

  // The base URL itself: clients check it is reachable (HEAD / before their first call) before they use it.
  // Only `/` itself: Express would also route targets its URL parsing folds into `/` (`http://host/\`).
  app.get('/', (request, response, next) => {
    if (request.originalUrl !== '/' && !request.originalUrl.startsWith('/?')) return next();
    response.json({ service: 'inference-gateway', api: '/v1' });
  });

  // An unknown endpoint is 404 for anyone; a verified key also learns where it stands in its window.
  app.use((request: Request, response: Response) => {
    const caller = callerRequest(request, response, options);
    const refuse = async () => {
      if (!caller.presentedKey) return sendError(response, unknownEndpoint(request));
      const verified = await authenticate(deps.keys, caller);
      if (!verified.ok) return sendError(response, unknownEndpoint(request));
      await refuseVerified(
        deps,
        { setRateLimit: setRateLimit(response), fail: (error) => sendError(response, error) },
        verified.value,
        unknownEndpoint(request),
        caller,
      );
    };
    refuse().catch(failed(response));
  });
  app.use(internalError(options.logger));
  return app;
}

export interface AdminAppOptions {
  /** True once the process can answer requests (`/readyz`). */
  ready(): boolean;
  clients: Clients;
  operatorToken: string;
  trustedProxies: readonly string[];
  /** The plans of the gateway YAML in force, for the limits page. */
  plans(): readonly PlanConfig[];
  /** Host names the admin API and dashboard answer for; health checks answer any. */
  allowedHosts: readonly string[];
  logger: Logger;
}

/** The dashboard's built assets (dashboard/dist, made by `make build`). */
const dashboardAssets = path.join(path.dirname(require.resolve('@gw/dashboard/package.json')), 'dist');

/**
 * Every admin-port answer: only the dashboard's own files may run or load (no inline script or style),
 * it may not be framed, nothing is sniffed or cached, no referrer leaves.
 */
const adminSecurityHeaders = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/**
 * Ready to serve: `/healthz` says the process is alive, `/readyz` that it can answer requests (it has
 * policy's catalogue, which also proves policy reachable), so that no one is sent traffic it would refuse.
 */
function readiness(ready: () => boolean) {
  return (_request: Request, response: Response) => {
    if (ready()) response.json({ status: 'ready' });
    else response.status(503).json({ status: 'starting' });
  };
}

/** The operator-facing port: health, the admin API (docs/admin-api.md) and the dashboard at `/`. */
export function createAdminApp(options: AdminAppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(assignRequestId);
  app.use((_request, response, next) => {
    response.set(adminSecurityHeaders);
    next();
  });
  app.get('/healthz', (_request, response) => {
    response.json({ status: 'ok' });
  });
  app.get('/readyz', readiness(options.ready));
  app.use(requireKnownHost(options.allowedHosts, sendError));
  app.use('/admin/v1', adminRoutes({ ...options, sendError }));
  app.use(express.static(dashboardAssets, { index: 'index.html', redirect: false }));
  app.use(notFound);
  app.use(internalError(options.logger));
  return app;
}
