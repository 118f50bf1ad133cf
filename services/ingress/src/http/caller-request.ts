import type { Request, Response } from 'express';
import type { Result } from '@gw/errors';
import { sourceAddress } from '@gw/addresses';
import type { Logger } from '@gw/telemetry';
import type { BodyBudget } from '@gw/workers';
import type { CallerRequest } from '../pipeline/types';
import { requestTraceContext } from '../telemetry/request-tracing';
import { readBody as readRequestBody } from './body';
import type { BodyTimeouts, DiscardBounds } from './body';
import { presentedKey } from './credentials';
import { discardBeforeClosing, requestIdOf } from './send-error';

/** How the public edge reads requests. */
export interface RequestReading {
  /** How much of a refused upload is still read (and dropped) so that its client reads the refusal. */
  refusedUploadDiscard: DiscardBounds;
  /** How long a body may pause, and take in all, while it arrives. */
  bodyTimeouts: BodyTimeouts;
  /** The bytes of bodies this process may hold at once, shared by every request. */
  bodyBudget: BodyBudget;
  /** Peers whose X-Forwarded-For is believed (CIDR ranges or addresses). */
  trustedProxies: readonly string[];
  logger: Logger;
}

const protocolHeaderNames = ['anthropic-version', 'anthropic-beta'];

/** The query string of a request target, without its `?`; its length is bounded by the request head's. */
function queryOf(target: string): string {
  const start = target.indexOf('?');
  return start < 0 ? '' : target.slice(start + 1);
}

function protocolHeadersOf(request: Request): Record<string, string> {
  const protocolHeaders: Record<string, string> = {};
  for (const name of protocolHeaderNames) {
    const value = request.headers[name];
    if (value !== undefined) protocolHeaders[name] = Array.isArray(value) ? value.join(',') : value;
  }
  return protocolHeaders;
}

/** Builds the CallerRequest of an HTTP request: id, key, source address, body reader, protocol headers. */
export function callerRequest(request: Request, response: Response, options: RequestReading): CallerRequest {
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
    protocolHeaders: protocolHeadersOf(request),
    query: queryOf(request.originalUrl),
    signal: disconnected.signal,
  };
  response.locals.caller = caller;
  return caller;
}
