import type { ServerResponse } from 'node:http';

/**
 * The error `type` for an HTTP status. OpenAI-compatible servers disagree on types (OpenAI's own
 * `invalid_request_error` / `server_error`, vLLM's `BadRequestError`, …); these keep the
 * simulator's readable, and the status is what a client acts on.
 */
export function openAIErrorTypeForStatus(status: number): string {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 429:
      return 'rate_limit_error';
    default:
      return status < 500 ? 'invalid_request_error' : 'server_error';
  }
}

/** The error body, vLLM-shaped: OpenAI's `{"error":{"message","type","param","code"}}` with the status as `code`. */
export function openAIErrorBody(status: number, message: string, param: string | null = null): string {
  return JSON.stringify({ error: { message, type: openAIErrorTypeForStatus(status), param, code: status } });
}

/** Ends the response with an error status and the error body. */
export function sendOpenAIError(
  response: ServerResponse,
  requestId: string,
  status: number,
  message: string,
  options: { param?: string; headers?: Record<string, string> } = {},
): void {
  response.writeHead(status, { 'content-type': 'application/json', 'x-request-id': requestId, ...options.headers });
  response.end(openAIErrorBody(status, message, options.param ?? null));
}
