import type { ServerResponse } from 'node:http';

/** The upstream's `error.type` for an HTTP status (docs.claude.com/en/api/errors). */
export function errorTypeForStatus(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    case 504:
      return 'timeout_error';
    default:
      return status < 500 ? 'invalid_request_error' : 'api_error';
  }
}

export function errorBody(type: string, message: string, requestId: string): string {
  return JSON.stringify({ type: 'error', error: { type, message }, request_id: requestId });
}

/** Ends the response with an error status and the upstream's error envelope. */
export function sendError(
  response: ServerResponse,
  requestId: string,
  status: number,
  message: string,
  extraHeaders: Record<string, string> = {},
): void {
  response.writeHead(status, { 'content-type': 'application/json', 'request-id': requestId, ...extraHeaders });
  response.end(errorBody(errorTypeForStatus(status), message, requestId));
}
