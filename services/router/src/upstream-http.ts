import type { IncomingHttpHeaders } from 'node:http';
import { Agent, request as undiciRequest } from 'undici';
import { err, ok } from '@gw/errors';
import type { Result } from '@gw/errors';

export interface UpstreamTimeouts {
  /** TCP (and TLS) connection set-up. */
  connectMs: number;
  /**
   * Until the headers of a call the upstream answers at once: a streamed call (it then streams) or a
   * token count.
   */
  streamHeadersMs: number;
  /** Until the headers of a non-streamed call: the upstream answers only once it has generated everything. */
  messageHeadersMs: number;
  /** Longest silence between two body chunks. */
  bodySilenceMs: number;
}

export interface UpstreamHttpRequest {
  url: string;
  headers: Record<string, string>;
  /** Text, or the bytes of a body passed on as the caller sent it. */
  body: string | Uint8Array;
}

/** Why no (more) bytes came from the upstream. */
export interface TransportFailure {
  kind: 'connect' | 'reset' | 'timeout' | 'cancelled';
  /** The system or undici error code, for logs. */
  code: string;
}

/** The body as chunks; a failure while reading is the last item. */
export type UpstreamBody = AsyncIterable<Result<Uint8Array, TransportFailure>>;

export interface UpstreamResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: UpstreamBody;
  /** Frees the connection when the body will not be read. */
  discard(): void;
}

export interface UpstreamHttp {
  /**
   * POSTs the request; the signal aborts it at once, at any stage. `generating`: the upstream sends
   * its headers only once it has generated the whole answer (a non-streamed message), so the long
   * headers timeout applies; otherwise the short one.
   */
  send(
    request: UpstreamHttpRequest,
    options: { generating: boolean; signal: AbortSignal },
  ): Promise<Result<UpstreamResponse, TransportFailure>>;
  close(): Promise<void>;
}

/** A cheap GET of an endpoint, for the active health checks. */
export interface ProbeHttp {
  /**
   * GETs the URL without credentials and discards the body; resolves with the status once the
   * headers arrived. `timeoutMs` bounds the whole probe, connection included (then a `timeout`
   * failure); the signal cancels it.
   */
  probe(url: string, options: { timeoutMs: number; signal: AbortSignal }): Promise<Result<number, TransportFailure>>;
}

const connectErrorCodes = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);
const timeoutErrorCodes = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

function classify(error: unknown, signal: AbortSignal): TransportFailure {
  if (signal.aborted) return { kind: 'cancelled', code: 'ABORTED' };
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : 'UNKNOWN';
  if (connectErrorCodes.has(code)) return { kind: 'connect', code };
  if (timeoutErrorCodes.has(code)) return { kind: 'timeout', code };
  return { kind: 'reset', code };
}

function flattenHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

async function* readBody(body: AsyncIterable<Buffer>, signal: AbortSignal): UpstreamBody {
  try {
    for await (const chunk of body) yield ok(chunk);
  } catch (error) {
    yield err(classify(error, signal));
  }
}

/** One keep-alive connection pool for every upstream endpoint, with the timeouts applied per call. */
export function createUpstreamHttp(timeouts: UpstreamTimeouts): UpstreamHttp & ProbeHttp {
  const agent = new Agent({
    connect: { timeout: timeouts.connectMs },
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 600_000,
  });
  return {
    async send(request, { generating, signal }) {
      try {
        const response = await undiciRequest(request.url, {
          dispatcher: agent,
          method: 'POST',
          headers: request.headers,
          body: request.body,
          signal,
          headersTimeout: generating ? timeouts.messageHeadersMs : timeouts.streamHeadersMs,
          bodyTimeout: timeouts.bodySilenceMs,
        });
        return ok({
          status: response.statusCode,
          headers: flattenHeaders(response.headers),
          body: readBody(response.body, signal),
          discard: () => response.body.destroy(),
        });
      } catch (error) {
        return err(classify(error, signal));
      }
    },
    async probe(url, { timeoutMs, signal }) {
      const timedOut = new AbortController();
      const timer = setTimeout(() => timedOut.abort(), timeoutMs);
      const both = AbortSignal.any([signal, timedOut.signal]);
      try {
        const response = await undiciRequest(url, {
          dispatcher: agent,
          method: 'GET',
          signal: both,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        });
        response.body.dump().catch(() => undefined);
        return ok(response.statusCode);
      } catch (error) {
        if (signal.aborted) return err({ kind: 'cancelled', code: 'ABORTED' });
        if (timedOut.signal.aborted) return err({ kind: 'timeout', code: 'PROBE_TIMEOUT' });
        return err(classify(error, both));
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => agent.close(),
  };
}
