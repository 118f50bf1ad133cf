import type { Response } from 'express';
import { droppedBetasHeader, droppedBetasHeaderValue } from '@gw/catalogue';
import type { ResponseSink } from '../pipeline/types';
import { streamErrorType } from '../telemetry/edge-metrics';
import { rateLimitHeaders } from './rate-limit-headers';
import { sendError } from './send-error';
import { pingFrame, sseFrame } from './sse';

/** The ResponseSink of one HTTP response: JSON, or an SSE stream written whole event by event. */
export function responseSink(response: Response, pingIntervalMs: number, headerPrefix: string): ResponseSink {
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
