/** Socket errors of a server that is down, restarting or unreachable. */
const socketCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
]);

/** SQLSTATEs of a server that is shutting down, starting up or out of connections. */
const unavailableStates = new Set(['57P01', '57P02', '57P03', '53300']);

/** What pg says when a connection ends or cannot be had, without a code. */
const connectionMessages = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
];

/**
 * True when a query failed because PostgreSQL could not be reached (down, restarting, out of
 * connections), not because of the statement: such a failure is an outage the caller is told to wait
 * out (503), while any other failure is a bug (500).
 */
export function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (socketCodes.has(code) || unavailableStates.has(code)) return true;
    // Class 08: connection exception.
    if (/^08[0-9A-Z]{3}$/.test(code)) return true;
  }
  if (connectionMessages.some((message) => error.message.startsWith(message))) return true;
  // A connection attempt to every address of a host failed.
  return error instanceof AggregateError && error.errors.some(isConnectionFailure);
}
