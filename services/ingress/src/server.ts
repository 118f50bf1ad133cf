import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { gatewayError, internalErrorMessage } from '@gw/errors';
import type { RateLimitWindow, Result } from '@gw/errors';
import { callerRequest } from './http/caller-request';
import type { RequestReading } from './http/caller-request';
import {
  assignRequestId,
  bodyPrecheck,
  credentialsPrecheck,
  internalError,
  observeRequests,
  readiness,
  unknownEndpoint,
} from './http/edge-middleware';
import type { PrecheckOptions } from './http/edge-middleware';
import { rateLimitHeaders } from './http/rate-limit-headers';
import { responseSink } from './http/response-sink';
import { logFieldsOf, sendError } from './http/send-error';
import { usageReportJson } from './domain/usage-report';
import { authenticate } from './pipeline/authenticate';
import { handleCountTokens } from './pipeline/count-tokens';
import type { CountTokensDeps } from './pipeline/count-tokens';
import { handleMessages } from './pipeline/messages';
import { handleGetModel, handleListModels } from './pipeline/models';
import type { ModelsDeps } from './pipeline/models';
import { refuseVerified } from './pipeline/refuse';
import type { KeyVerifier, MessagesDeps, RefusalDeps } from './pipeline/types';
import { handleUsage } from './pipeline/usage-report';
import type { UsageDeps } from './pipeline/usage-report';
import type { EdgeMetrics } from './telemetry/edge-metrics';
import type { RefusalCounts } from './telemetry/refusal-counts';
import { traceRequests } from './telemetry/request-tracing';

export { createAdminApp } from './http/admin-app';

/** Each public endpoint's own dependencies. */
export interface PublicEndpoints {
  messages: MessagesDeps;
  countTokens: CountTokensDeps;
  models: ModelsDeps;
  usage: UsageDeps;
  /** An unknown endpoint is 404 for anyone; a verified key also learns where it stands in its window. */
  unknown: { keys: KeyVerifier; refusal: RefusalDeps };
}

export interface PublicAppOptions extends RequestReading, PrecheckOptions {
  /** True once the process can answer requests (`/readyz`). */
  ready(): boolean;
  /** First segment of the rate-limit header names, `anthropic` by default. */
  rateLimitHeaderPrefix: string;
  ssePingIntervalMs: number;
  metrics: EdgeMetrics;
  /** Counts each refusal against the key its request was verified as (usage per key). */
  refusals?: Pick<RefusalCounts, 'refused'>;
}

/** The public port: health, then each endpoint a thin handler handing the request to its pipeline. */
export function createPublicApp(endpoints: PublicEndpoints, options: PublicAppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(assignRequestId);
  const caller = (request: Request, response: Response) => callerRequest(request, response, options);
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

  app.post('/v1/messages', bodyPrecheck(options), (request, response) => {
    const sink = responseSink(response, options.ssePingIntervalMs, options.rateLimitHeaderPrefix);
    handleMessages(endpoints.messages, caller(request, response), sink).catch(failed(response));
  });
  app.post('/v1/messages/count_tokens', bodyPrecheck(options), (request, response) => {
    handleCountTokens(endpoints.countTokens, caller(request, response), setRateLimit(response)).then(
      respond(response),
      failed(response),
    );
  });
  app.get('/v1/usage', (request, response) => {
    handleUsage(endpoints.usage, caller(request, response), setRateLimit(response)).then((result) => {
      if (result.ok) response.status(200).type('application/json').send(usageReportJson(result.value));
      else sendError(response, result.error);
    }, failed(response));
  });
  app.get('/v1/models', (request, response) => {
    const query = request.query as Record<string, unknown>;
    handleListModels(endpoints.models, caller(request, response), query, setRateLimit(response)).then(
      respond(response),
      failed(response),
    );
  });
  app.get('/v1/models/:id', (request, response) => {
    const id = String(request.params.id);
    handleGetModel(endpoints.models, caller(request, response), id, setRateLimit(response)).then(
      respond(response),
      failed(response),
    );
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

  app.use((request: Request, response: Response) => {
    refuseUnknownEndpoint(
      endpoints.unknown,
      caller(request, response),
      request,
      response,
      setRateLimit(response),
    ).catch(failed(response));
  });
  app.use(internalError(options.logger));
  return app;
}

/** 404 for anyone; a verified key also learns where it stands in its per-minute window. */
async function refuseUnknownEndpoint(
  deps: PublicEndpoints['unknown'],
  caller: ReturnType<typeof callerRequest>,
  request: Request,
  response: Response,
  setRateLimit: (window: RateLimitWindow) => void,
): Promise<void> {
  if (!caller.presentedKey) return sendError(response, unknownEndpoint(request));
  const verified = await authenticate(deps.keys, caller);
  if (!verified.ok) return sendError(response, unknownEndpoint(request));
  const sink = { setRateLimit, fail: (error: Parameters<typeof sendError>[1]) => sendError(response, error) };
  await refuseVerified(deps.refusal, sink, verified.value, unknownEndpoint(request), caller);
}
