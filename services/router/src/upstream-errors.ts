import { gatewayError, isErrorType } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import type { TransportFailure } from './upstream-http';

/**
 * Why one attempt on one upstream endpoint produced no response to relay. Everything before the
 * first byte reached the caller; what comes after is handled by the adapter's relay.
 */
export type AttemptFailure =
  /** Connection refused or reset before an answer: the request may never have arrived. */
  | { kind: 'unreachable'; code: string }
  /** No response headers in time. */
  | { kind: 'timeout' }
  /** The caller went away. */
  | { kind: 'cancelled' }
  /** 429, 503 or 529: saturated for now. */
  | { kind: 'busy'; status: number; retryAfterMs?: number }
  /** The credential env var is unset, or the upstream refused it (401, 403). */
  | { kind: 'credential'; status?: number }
  /** 400, 413, 422: the request itself was refused and would be everywhere. */
  | { kind: 'rejected'; status: number; message?: string }
  /** Any other status, or a 200 that is not what the protocol promises. */
  | { kind: 'failed'; status: number };

/** Whether the next endpoint may be tried: a failure of this endpoint, not of the request. */
export function failsOver(failure: AttemptFailure): boolean {
  switch (failure.kind) {
    case 'unreachable':
    case 'busy':
    case 'credential':
    case 'failed':
      return true;
    case 'timeout':
    case 'cancelled':
    case 'rejected':
      return false;
  }
}

export function failureOfTransport(failure: TransportFailure): AttemptFailure {
  switch (failure.kind) {
    case 'connect':
    case 'reset':
      return { kind: 'unreachable', code: failure.code };
    case 'timeout':
      return { kind: 'timeout' };
    case 'cancelled':
      return { kind: 'cancelled' };
  }
}

const maxRetryAfterMs = 60_000;
const defaultOverloadedRetryAfterMs = 1_000;

/** The upstream's wait hint: `retry-after-ms`, else `retry-after` in seconds or as an HTTP date. */
export function retryAfterMsOf(headers: Record<string, string>): number | undefined {
  const parse = (): number | undefined => {
    const milliseconds = Number(headers['retry-after-ms']);
    if (headers['retry-after-ms'] !== undefined && Number.isFinite(milliseconds)) return milliseconds;
    const value = headers['retry-after'];
    if (value === undefined) return undefined;
    const seconds = Number(value);
    if (Number.isFinite(seconds)) return seconds * 1000;
    const date = Date.parse(value);
    return Number.isNaN(date) ? undefined : date - Date.now();
  };
  const ms = parse();
  return ms === undefined ? undefined : Math.min(Math.max(0, Math.round(ms)), maxRetryAfterMs);
}

/** What a non-200 status means for the attempt; `upstreamMessage` is the upstream's error text. */
export function failureOfStatus(
  status: number,
  headers: Record<string, string>,
  upstreamMessage: string | undefined,
): AttemptFailure {
  if (status === 400 || status === 413 || status === 422) return { kind: 'rejected', status, message: upstreamMessage };
  if (status === 401 || status === 403) return { kind: 'credential', status };
  if (status === 429 || status === 503 || status === 529) {
    return { kind: 'busy', status, retryAfterMs: retryAfterMsOf(headers) };
  }
  return { kind: 'failed', status };
}

export const credentialNotConfiguredMessage =
  'The model service is temporarily unavailable: a credential the service depends on is not configured. Retry later; if it persists, contact support quoting the x-request-id header.';
const overloadedMessage = 'The model service is overloaded. Retry with exponential backoff.';
const upstreamFailedMessage =
  'The model service failed to answer. Retry once, then contact support quoting the x-request-id header.';
const upstreamTimeoutMessage =
  'The model service did not answer in time. Retry once, then contact support quoting the x-request-id header.';

/**
 * The caller's error once no attempt is left (docs/public-api.md#errors). The failure that stopped the attempts comes
 * last; otherwise saturation wins over a missing credential over anything else, since it is the
 * most useful thing to tell a client that will retry.
 */
export function errorOfFailures(failures: readonly AttemptFailure[]): GatewayError {
  const last = failures.at(-1);
  if (last?.kind === 'rejected') {
    const type = last.status === 413 ? 'request_too_large' : 'invalid_request_error';
    return gatewayError(type, last.message ?? 'The model service rejected the request.');
  }
  if (last?.kind === 'timeout') return gatewayError('api_error', upstreamTimeoutMessage);
  const busy = failures.filter((failure) => failure.kind === 'busy');
  if (busy.length > 0) {
    const hints = busy.flatMap((failure) => (failure.retryAfterMs === undefined ? [] : [failure.retryAfterMs]));
    const retryAfterMs = hints.length > 0 ? Math.min(...hints) : defaultOverloadedRetryAfterMs;
    return gatewayError('overloaded_error', overloadedMessage, { retryAfterMs });
  }
  if (failures.some((failure) => failure.kind === 'credential')) {
    return gatewayError('overloaded_error', credentialNotConfiguredMessage);
  }
  return gatewayError('api_error', upstreamFailedMessage);
}

/** The error for a transport failure after the first byte; undefined when the caller cancelled. */
export function errorAfterStart(failure: TransportFailure): GatewayError | undefined {
  switch (failure.kind) {
    case 'cancelled':
      return undefined;
    case 'timeout':
      return gatewayError('api_error', 'The model service went silent mid-response. Retry once.');
    case 'connect':
    case 'reset':
      return gatewayError('api_error', 'The connection to the model service broke mid-response. Retry once.');
  }
}

/** An error the upstream reported mid-stream: its type when the catalogue knows it, else api_error. */
export function errorOfUpstreamEvent(type: string | undefined, message: string | undefined): GatewayError {
  if (type !== undefined && isErrorType(type))
    return gatewayError(type, message ?? 'The model service failed mid-response.');
  return gatewayError('api_error', message ?? 'The model service failed mid-response. Retry once.');
}

export const malformedUpstreamMessage = 'The model service sent a malformed response. Retry once.';
