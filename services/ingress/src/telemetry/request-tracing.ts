import type { NextFunction, Request, Response } from 'express';
import { propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Context } from '@opentelemetry/api';
import { AllowList } from '@gw/addresses';
import type { GatewayError } from '@gw/errors';
import { boundedAttribute, sampledTraceId, traceparentOf, tracingActive } from '@gw/telemetry';
import type { Route, SettledRequest } from './edge-metrics';
import { routeOf } from './edge-metrics';
import type { eventsv1, MessageInitShape } from '@gw/proto';

type UsageEventInit = MessageInitShape<typeof eventsv1.UsageEventSchema>;

const tracer = trace.getTracer('@gw/ingress');

/** The response header that names the request's trace, so that a caller's report can be found. */
export const traceIdHeader = 'x-trace-id';

/** The route templates of the public API; any other path is no route (caller text stays out of spans). */
const httpRoutes: Record<Route, string | undefined> = {
  messages: '/v1/messages',
  count_tokens: '/v1/messages/count_tokens',
  models: '/v1/models',
  usage: '/v1/usage',
  other: undefined,
};

/** Status of a request whose client left before any answer, as the edge metrics count it. */
const clientClosedStatus = 499;

/**
 * The server span of every public request. A caller's W3C traceparent is honoured only from a trusted
 * proxy (the peers whose X-Forwarded-For is believed); from anyone else the request starts a new trace,
 * so that no client can join, or pick the id of, a trace of its choosing. A sampled request's response
 * names its trace in `x-trace-id`. The span's context is kept with the response (`requestTraceContext`)
 * and handed along the request's path from there. Tracing off: nothing but the call to next().
 */
export function traceRequests(trustedProxies: readonly string[]) {
  const proxies = new AllowList(trustedProxies);
  return (request: Request, response: Response, next: NextFunction): void => {
    if (!tracingActive()) return next();
    const fromTrustedProxy = trustedProxies.length > 0 && proxies.admits(request.socket.remoteAddress ?? '');
    const parent = fromTrustedProxy ? propagation.extract(ROOT_CONTEXT, request.headers) : ROOT_CONTEXT;
    const httpRoute = httpRoutes[routeOf(request.path)];
    // Node's parser admits only the methods it knows; cut anyway, it is the caller's text.
    const method = request.method.slice(0, 16);
    const span = tracer.startSpan(
      httpRoute === undefined ? method : `${method} ${httpRoute}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': method,
          ...(httpRoute !== undefined && { 'http.route': httpRoute }),
          'gateway.request_id': response.locals.requestId as string,
        },
      },
      parent,
    );
    const traceId = sampledTraceId(span);
    if (traceId !== undefined) response.setHeader(traceIdHeader, traceId);
    response.once('close', () => {
      const status = response.headersSent ? response.statusCode : clientClosedStatus;
      const error = response.locals.error as GatewayError | undefined;
      const errorType = (response.locals.streamErrorType as string | undefined) ?? error?.type;
      span.setAttribute('http.response.status_code', status);
      if (errorType !== undefined) span.setAttribute('error.type', errorType);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    response.locals.traceContext = trace.setSpan(parent, span);
    next();
  };
}

/** The trace context of a request's span (traceRequests); undefined while tracing is off. */
export function requestTraceContext(response: Response): Context | undefined {
  return response.locals.traceContext as Context | undefined;
}

/**
 * Adds what a settled `/v1/messages` request came to (GenAI conventions: model, token counts; the
 * serving region) to the request's span. Model names are the gateway's aliases, cut all the same.
 */
export function traceSettledRequest(settled: SettledRequest, traceContext: Context | undefined): void {
  if (!tracingActive() || traceContext === undefined) return;
  const span = trace.getSpan(traceContext);
  if (!span?.isRecording()) return;
  span.setAttributes({
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': boundedAttribute(settled.model),
    'gen_ai.usage.input_tokens': settled.tokens.inputTokens,
    'gen_ai.usage.output_tokens': settled.tokens.outputTokens,
    'gateway.usage.cache_read_input_tokens': settled.tokens.cacheReadInputTokens,
    'gateway.usage.cache_creation_input_tokens': settled.tokens.cacheCreationInputTokens,
    'gateway.region': boundedAttribute(settled.region),
    'gateway.streamed': settled.streamed,
  });
}

/**
 * Sends a usage event under a producer span of its own (a child of the request's), whose context
 * travels with the event (into the spool, then the Kafka message's traceparent header) for metering's
 * span to link to. The span ends once the event is durable in the spool.
 */
export function sendUsageTraced(
  event: UsageEventInit,
  topic: string,
  requestContext: Context | undefined,
  send: (event: UsageEventInit) => Promise<void>,
): Promise<void> {
  if (!tracingActive() || requestContext === undefined) return send(event);
  const span = tracer.startSpan(
    `${topic} send`,
    {
      kind: SpanKind.PRODUCER,
      attributes: {
        'messaging.system': 'kafka',
        'messaging.operation.type': 'send',
        'messaging.destination.name': topic,
      },
    },
    requestContext,
  );
  return send({ ...event, traceparent: traceparentOf(trace.setSpan(requestContext, span)) ?? '' }).then(
    () => span.end(),
    (error: unknown) => {
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      throw error;
    },
  );
}
