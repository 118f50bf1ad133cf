import { gatewayError } from '@gw/errors';
import type { GatewayError } from '@gw/errors';
import { isJsonObject } from '../../completion';
import type { UpstreamErrorBody } from '../types';
import type { EventStreamFrame } from './event-stream';

/** `{"message": "…"}`, Bedrock's error body (its type is in the `x-amzn-errortype` header). */
export function parseErrorBody(text: string): UpstreamErrorBody {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    return {};
  }
  if (!isJsonObject(value)) return {};
  const message =
    typeof value.message === 'string' ? value.message : typeof value.Message === 'string' ? value.Message : undefined;
  const type = typeof value.__type === 'string' ? value.__type : undefined;
  return { type, message };
}

/**
 * What an exception frame in a begun stream means for the caller, by its `:exception-type`:
 * saturation is `overloaded_error` (retry later), a request Bedrock refuses is `invalid_request_error`,
 * anything else `api_error`. The message is Bedrock's.
 */
export function errorOfExceptionFrame(frame: EventStreamFrame): GatewayError {
  const type = frame.headers[':exception-type'] ?? frame.headers[':error-code'] ?? '';
  let message = frame.headers[':error-message'];
  try {
    const body = JSON.parse(Buffer.from(frame.payload).toString('utf8')) as unknown;
    if (isJsonObject(body) && typeof body.message === 'string') message = body.message;
  } catch {
    // An exception without a JSON body: its type says enough.
  }
  switch (type) {
    case 'throttlingException':
    case 'serviceUnavailableException':
    case 'serviceQuotaExceededException':
      return gatewayError(
        'overloaded_error',
        message ?? 'The model service is overloaded. Retry with exponential backoff.',
      );
    case 'validationException':
      return gatewayError('invalid_request_error', message ?? 'The model service rejected the request.');
    default:
      return gatewayError('api_error', message ?? 'The model service failed mid-response. Retry once.');
  }
}
