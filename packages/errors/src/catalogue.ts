import { status as GrpcStatus } from '@grpc/grpc-js';

/**
 * The one place that maps an error type (docs/public-api.md#errors and docs/decisions.md) to its HTTP status, gRPC status
 * and SDK retry hint. Everything else asks this table.
 */
export const errorCatalogue = {
  authentication_error: { httpStatus: 401, grpcCode: GrpcStatus.UNAUTHENTICATED, shouldRetry: false },
  permission_error: { httpStatus: 403, grpcCode: GrpcStatus.PERMISSION_DENIED, shouldRetry: false },
  not_found_error: { httpStatus: 404, grpcCode: GrpcStatus.NOT_FOUND, shouldRetry: false },
  invalid_request_error: { httpStatus: 400, grpcCode: GrpcStatus.INVALID_ARGUMENT, shouldRetry: false },
  request_too_large: { httpStatus: 413, grpcCode: GrpcStatus.OUT_OF_RANGE, shouldRetry: false },
  rate_limit_error: { httpStatus: 429, grpcCode: GrpcStatus.RESOURCE_EXHAUSTED, shouldRetry: true },
  quota_exceeded: { httpStatus: 429, grpcCode: GrpcStatus.RESOURCE_EXHAUSTED, shouldRetry: false },
  residency_unavailable: { httpStatus: 422, grpcCode: GrpcStatus.FAILED_PRECONDITION, shouldRetry: false },
  overloaded_error: { httpStatus: 503, grpcCode: GrpcStatus.UNAVAILABLE, shouldRetry: true, retryAfterMs: 1_000 },
  api_error: { httpStatus: 500, grpcCode: GrpcStatus.INTERNAL, shouldRetry: true },
} as const satisfies Record<string, CatalogueEntry>;

export interface CatalogueEntry {
  httpStatus: number;
  grpcCode: GrpcStatus;
  /** Sent as `x-should-retry`, which both official SDKs honour over the status code. */
  shouldRetry: boolean;
  /**
   * The wait sent as `retry-after` when the error names none of its own: every 503 tells the caller
   * when to come back, whichever dependency is out.
   */
  retryAfterMs?: number;
}

export type ErrorType = keyof typeof errorCatalogue;

/** How long a caller is told to wait when the gateway or one of its dependencies is overloaded. */
export const overloadRetryAfterMs: number = errorCatalogue.overloaded_error.retryAfterMs;

export const errorTypes = Object.keys(errorCatalogue) as ErrorType[];

export function isErrorType(value: string): value is ErrorType {
  return Object.hasOwn(errorCatalogue, value);
}

/**
 * The error type a caller should see for a gRPC status that carried no error detail, i.e. a failure
 * of the call itself rather than a decision of the service.
 */
export function errorTypeForBareGrpcStatus(code: GrpcStatus): ErrorType {
  switch (code) {
    case GrpcStatus.UNAVAILABLE:
    case GrpcStatus.DEADLINE_EXCEEDED:
    case GrpcStatus.RESOURCE_EXHAUSTED:
      return 'overloaded_error';
    default:
      return 'api_error';
  }
}
