// The error types are the catalogue's keys (@gw/errors, the one map of type -> statuses and retry hint):
// named here too so that the shared words have one entry point, never declared a second time.
export { errorTypes, isErrorType, overloadRetryAfterMs } from '@gw/errors';
export type { ErrorType } from '@gw/errors';
