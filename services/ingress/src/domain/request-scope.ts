import type { Context } from '@opentelemetry/api';

/** Whom the gateway's calls for one request are made for: its id and, while tracing is on, its span's context. */
export interface RequestScope {
  requestId: string;
  traceContext?: Context;
}

/**
 * The options of a gRPC call made for a request: its id and its trace context, and nothing else of what
 * the scope may be (a CallerRequest's own signal must not cancel every call).
 */
export function callScope(scope: RequestScope): { requestId: string; traceContext?: Context } {
  return { requestId: scope.requestId, traceContext: scope.traceContext };
}
