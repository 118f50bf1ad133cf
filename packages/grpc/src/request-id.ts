/** Call metadata that carries the request id from hop to hop, so that every service logs it. */
export const requestIdMetadataKey = 'x-request-id';

// Bounded and plain, so that a value a caller chose cannot bloat or forge a log line.
const wellFormed = /^[A-Za-z0-9_-]{1,64}$/;

/** The value if it is a request id we pass on (at most 64 of [A-Za-z0-9_-]), else undefined. */
export function wellFormedRequestId(value: unknown): string | undefined {
  return typeof value === 'string' && wellFormed.test(value) ? value : undefined;
}
