import { Metadata, status as GrpcStatus } from '@grpc/grpc-js';
import type { ServiceError, StatusObject } from '@grpc/grpc-js';
import { create, fromBinary, toBinary, commonv1 } from '@gw/proto';
import { errorCatalogue, errorTypeForBareGrpcStatus, gatewayError, isErrorType } from '@gw/errors';
import type { GatewayError } from '@gw/errors';

/** Trailer that carries a GatewayError across a gRPC hop unchanged. */
export const errorDetailTrailer = 'gw-error-detail-bin';

export function toGrpcStatus(error: GatewayError): Partial<StatusObject> {
  const detail = create(commonv1.ErrorDetailSchema, {
    type: error.type,
    message: error.message,
    retryAfterMs: error.retryAfterMs === undefined ? undefined : BigInt(Math.round(error.retryAfterMs)),
    rateLimit: error.rateLimit && {
      limit: BigInt(error.rateLimit.limit),
      remaining: BigInt(error.rateLimit.remaining),
      resetUnixMs: BigInt(error.rateLimit.resetUnixMs),
    },
  });
  const metadata = new Metadata();
  metadata.set(errorDetailTrailer, Buffer.from(toBinary(commonv1.ErrorDetailSchema, detail)));
  return { code: errorCatalogue[error.type].grpcCode, details: error.message, metadata };
}

/** The GatewayError a failed call carried, or one that describes the failure of the call itself. */
export function fromGrpcError(error: Partial<ServiceError>, callee: string): GatewayError {
  const raw = error.metadata?.get(errorDetailTrailer)[0];
  if (raw instanceof Buffer) {
    const detail = fromBinary(commonv1.ErrorDetailSchema, raw);
    if (isErrorType(detail.type)) {
      return gatewayError(detail.type, detail.message, {
        retryAfterMs: detail.retryAfterMs === undefined ? undefined : Number(detail.retryAfterMs),
        rateLimit: detail.rateLimit && {
          limit: Number(detail.rateLimit.limit),
          remaining: Number(detail.rateLimit.remaining),
          resetUnixMs: Number(detail.rateLimit.resetUnixMs),
        },
      });
    }
  }
  const code = error.code ?? GrpcStatus.UNKNOWN;
  const type = errorTypeForBareGrpcStatus(code);
  return gatewayError(
    type,
    type === 'overloaded_error'
      ? `The gateway's ${callee} service is temporarily unavailable. Retry with exponential backoff.`
      : `The gateway's ${callee} service failed. Retry once, then contact support quoting the x-request-id header.`,
    type === 'overloaded_error' ? { retryAfterMs: 1000 } : {},
  );
}
