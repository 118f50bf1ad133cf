import {
  dependencyUnavailableError,
  errorCatalogue,
  errorEnvelope,
  errorTypes,
  gatewayError,
  httpStatusOf,
  internalErrorMessage,
  malformedReplyError,
  retryHeaders,
} from '../src';

describe('error catalogue', () => {
  it('gives each spec error type its status', () => {
    expect(Object.fromEntries(errorTypes.map((type) => [type, httpStatusOf(type)]))).toEqual({
      authentication_error: 401,
      permission_error: 403,
      not_found_error: 404,
      invalid_request_error: 400,
      request_too_large: 413,
      rate_limit_error: 429,
      quota_exceeded: 429,
      residency_unavailable: 422,
      overloaded_error: 503,
      api_error: 500,
    });
  });

  it('tells the SDKs never to retry what the spec says never to retry', () => {
    const never = errorTypes.filter((type) => !errorCatalogue[type].shouldRetry).sort();
    expect(never).toEqual(
      [
        'authentication_error',
        'invalid_request_error',
        'not_found_error',
        'permission_error',
        'quota_exceeded',
        'request_too_large',
        'residency_unavailable',
      ].sort(),
    );
    expect(retryHeaders(gatewayError('quota_exceeded', 'x', { retryAfterMs: 5000 }))).toEqual({
      'x-should-retry': 'false',
    });
  });

  it('rounds retry-after up to whole seconds and keeps the exact milliseconds', () => {
    expect(retryHeaders(gatewayError('rate_limit_error', 'x', { retryAfterMs: 1200 }))).toEqual({
      'x-should-retry': 'true',
      'retry-after': '2',
      'retry-after-ms': '1200',
    });
  });

  it('builds the envelope with the request id', () => {
    expect(errorEnvelope(gatewayError('not_found_error', 'gone'), 'req_1')).toEqual({
      type: 'error',
      error: { type: 'not_found_error', message: 'gone' },
      request_id: 'req_1',
    });
  });

  it('tells the caller of every 503 when to come back, whether the error names a wait or not', () => {
    expect(retryHeaders(gatewayError('overloaded_error', 'x'))).toEqual({
      'x-should-retry': 'true',
      'retry-after': '1',
      'retry-after-ms': '1000',
    });
    expect(retryHeaders(gatewayError('overloaded_error', 'x', { retryAfterMs: 5000 }))['retry-after']).toBe('5');
    // Errors without a default wait send none of their own.
    expect(retryHeaders(gatewayError('api_error', 'x'))).toEqual({ 'x-should-retry': 'true' });
  });

  it('answers every dependency outage alike: 503 overloaded_error naming the dependency, with a wait', () => {
    const outage = dependencyUnavailableError('key store');
    expect(outage).toMatchObject({ type: 'overloaded_error', retryAfterMs: 1000 });
    expect(outage.message).toBe('The gateway cannot reach its key store right now. Retry with exponential backoff.');
    expect(httpStatusOf(outage.type)).toBe(503);
    expect(dependencyUnavailableError('usage store').message).toBe(outage.message.replace('key store', 'usage store'));
  });
});

describe('malformedReplyError', () => {
  it('is a catalogued internal failure (500, retried once) that names no part of the reply to the caller', () => {
    const error = malformedReplyError();
    expect(error).toEqual({ type: 'api_error', message: internalErrorMessage, reason: 'malformed_reply' });
    expect(errorCatalogue[error.type].httpStatus).toBe(500);
    expect(retryHeaders(error)['x-should-retry']).toBe('true');
  });
});
