import { Metadata, status as GrpcStatus } from '@grpc/grpc-js';
import type { ServiceError, StatusObject } from '@grpc/grpc-js';
import { create, fromBinary, toBinary, commonv1 } from '@gw/proto';
import {
  errorCatalogue,
  errorTypeForBareGrpcStatus,
  gatewayError,
  isErrorType,
  overloadRetryAfterMs,
} from '@gw/errors';
import type { GatewayError } from '@gw/errors';

/** Trailer that carries a GatewayError across a gRPC hop unchanged (its message bounded). */
export const errorDetailTrailer = 'gw-error-detail-bin';

/**
 * Longest error message, in UTF-8 bytes, that crosses a hop. A message may echo what the caller sent;
 * unbounded, it could make trailers too large for the peer, and the HTTP/2 connection that every
 * other call shares would fail with it.
 */
export const maxCrossingMessageBytes = 1024;

const ellipsis = '…';

/** The message cut to maxBytes of valid UTF-8, ending in an ellipsis when anything was cut. */
export function boundedMessage(message: string, maxBytes = maxCrossingMessageBytes): string {
  const encoded = Buffer.from(message, 'utf8');
  if (encoded.byteLength <= maxBytes) return message;
  let end = maxBytes - Buffer.byteLength(ellipsis, 'utf8');
  // Step back over continuation bytes (10xxxxxx) so that no character is cut in half.
  while (end > 0 && (encoded[end]! & 0xc0) === 0x80) end -= 1;
  return encoded.toString('utf8', 0, end) + ellipsis;
}

/** The ErrorDetail that carries a GatewayError across a hop, in a trailer or a multiplexed reply. */
export function errorDetailOf(error: GatewayError): commonv1.ErrorDetail {
  return create(commonv1.ErrorDetailSchema, {
    type: error.type,
    message: boundedMessage(error.message),
    retryAfterMs: error.retryAfterMs === undefined ? undefined : BigInt(Math.round(error.retryAfterMs)),
    rateLimit: error.rateLimit && {
      limit: BigInt(error.rateLimit.limit),
      remaining: BigInt(error.rateLimit.remaining),
      resetUnixMs: BigInt(error.rateLimit.resetUnixMs),
    },
    reason: error.reason,
  });
}

/** The GatewayError an ErrorDetail carries; undefined for an error type this build does not know. */
export function gatewayErrorOf(detail: commonv1.ErrorDetail): GatewayError | undefined {
  if (!isErrorType(detail.type)) return undefined;
  return gatewayError(detail.type, detail.message, {
    retryAfterMs: detail.retryAfterMs === undefined ? undefined : Number(detail.retryAfterMs),
    rateLimit: detail.rateLimit && {
      limit: Number(detail.rateLimit.limit),
      remaining: Number(detail.rateLimit.remaining),
      resetUnixMs: Number(detail.rateLimit.resetUnixMs),
    },
    reason: detail.reason,
  });
}

export function toGrpcStatus(error: GatewayError): Partial<StatusObject> {
  const detail = errorDetailOf(error);
  const metadata = new Metadata();
  metadata.set(errorDetailTrailer, Buffer.from(toBinary(commonv1.ErrorDetailSchema, detail)));
  return { code: errorCatalogue[error.type].grpcCode, details: detail.message, metadata };
}

/** The GatewayError a failed call carried, or one that describes the failure of the call itself. */
export function fromGrpcError(error: Partial<ServiceError>, callee: string): GatewayError {
  const raw = error.metadata?.get(errorDetailTrailer)[0];
  const carried = raw instanceof Buffer ? gatewayErrorOf(fromBinary(commonv1.ErrorDetailSchema, raw)) : undefined;
  if (carried) return carried;
  const code = error.code ?? GrpcStatus.UNKNOWN;
  const type = errorTypeForBareGrpcStatus(code);
  return gatewayError(
    type,
    type === 'overloaded_error'
      ? `The gateway's ${callee} service is temporarily unavailable. Retry with exponential backoff.`
      : `The gateway's ${callee} service failed. Retry once, then contact support quoting the x-request-id header.`,
    type === 'overloaded_error' ? { retryAfterMs: overloadRetryAfterMs } : {},
  );
}
