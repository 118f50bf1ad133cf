import type { CatalogueEntry, ErrorType } from './catalogue';
import { errorCatalogue } from './catalogue';
import { internalErrorMessage } from './messages';

/** Position of an account in its per-minute window, for the rate-limit headers. */
export interface RateLimitWindow {
  limit: number;
  remaining: number;
  resetUnixMs: number;
}

/** A failure as a value. Domain code returns these; only the edges turn them into HTTP or gRPC. */
export interface GatewayError {
  type: ErrorType;
  message: string;
  retryAfterMs?: number;
  rateLimit?: RateLimitWindow;
  /**
   * Which refusal of its type this is (a limit kind, why a key did not verify), so that metrics count
   * refusals by kind without reading messages. Never sent to the caller: the answer stays the same.
   */
  reason?: string;
}

export function gatewayError(
  type: ErrorType,
  message: string,
  extra: Omit<GatewayError, 'type' | 'message'> = {},
): GatewayError {
  return { type, message, ...extra };
}

export type Result<T, E = GatewayError> = { ok: true; value: T } | { ok: false; error: E };

export function ok<T>(value: T): Result<T, never> {
  return { ok: true, value };
}

export function err<E = GatewayError>(error: E): Result<never, E> {
  return { ok: false, error };
}

/** The public API's error envelope (docs/public-api.md#errors) with the request id the SDKs expose. */
export interface ErrorEnvelope {
  type: 'error';
  error: { type: ErrorType; message: string };
  request_id: string;
}

export function errorEnvelope(error: GatewayError, requestId: string): ErrorEnvelope {
  return { type: 'error', error: { type: error.type, message: error.message }, request_id: requestId };
}

export function httpStatusOf(type: ErrorType): number {
  return errorCatalogue[type].httpStatus;
}

/** The wait a caller is told for an error: its own, else its type's default in the catalogue. */
export function retryAfterMsOf(error: GatewayError): number | undefined {
  const entry: CatalogueEntry = errorCatalogue[error.type];
  if (!entry.shouldRetry) return undefined;
  return error.retryAfterMs ?? entry.retryAfterMs;
}

/**
 * The headers that steer SDK retries for an error: `x-should-retry` always, `retry-after` (whole
 * seconds, rounded up) and `retry-after-ms` when the error carries a wait or its type has one.
 */
export function retryHeaders(error: GatewayError): Record<string, string> {
  const headers: Record<string, string> = {
    'x-should-retry': String(errorCatalogue[error.type].shouldRetry),
  };
  const retryAfterMs = retryAfterMsOf(error);
  if (retryAfterMs !== undefined) {
    headers['retry-after'] = String(Math.max(0, Math.ceil(retryAfterMs / 1000)));
    headers['retry-after-ms'] = String(Math.max(0, Math.round(retryAfterMs)));
  }
  return headers;
}

/**
 * A dependency of the gateway (a store, a broker) cannot be reached: 503 overloaded_error with the
 * catalogue's wait, whichever service and whichever dependency, so that callers see one answer for
 * every outage. `what` names the dependency as a caller may read it ("key store", "limits store").
 */
export function dependencyUnavailableError(what: string, retryAfterMs?: number): GatewayError {
  return gatewayError(
    'overloaded_error',
    `The gateway cannot reach its ${what} right now. Retry with exponential backoff.`,
    { retryAfterMs: retryAfterMs ?? errorCatalogue.overloaded_error.retryAfterMs, reason: 'dependency_unavailable' },
  );
}

/**
 * A service of the gateway answered with a reply its caller cannot read (a field it needs is missing or
 * out of range): a failure of the gateway, so `api_error` with the message of every internal failure,
 * decided where the reply is decoded instead of surfacing as an exception. `reason` tells it apart in
 * logs and metrics; which service and field is for the caller's own log, never for the client.
 */
export function malformedReplyError(): GatewayError {
  return gatewayError('api_error', internalErrorMessage, { reason: 'malformed_reply' });
}
