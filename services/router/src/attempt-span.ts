import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Context, Span } from '@opentelemetry/api';
import { boundedAttribute, tracingActive } from '@gw/telemetry';
import type { Pool } from './pools';

const tracer = trace.getTracer('@gw/router');

/** What an attempt's span is named and said to be about. */
export interface AttemptTarget {
  /** `messages` or `count_tokens`. */
  operation: string;
  /** The model alias the caller asked for. */
  model: string;
  pool: Pool;
  endpointUrl: string;
}

/**
 * Runs one upstream attempt in a client span of its own (GenAI conventions where they fit): pool,
 * region, endpoint and, once it is known, the outcome (`accepted`, or the failure as the metrics name
 * it). The span covers the attempt until the upstream's headers (or its failure); a relayed body is
 * the server span's. `run` is given the attempt span's context (for its log lines). Tracing off, or no
 * calling span: the attempt alone.
 */
export async function tracedAttempt<T>(
  target: AttemptTarget,
  parent: Context | undefined,
  run: (attemptContext: Context | undefined) => Promise<T>,
  outcomeOf: (result: T) => string,
): Promise<T> {
  if (!tracingActive() || parent === undefined) return run(undefined);
  const operationName = target.operation === 'messages' ? 'chat' : target.operation;
  const span: Span = tracer.startSpan(
    `${operationName} ${boundedAttribute(target.model)}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'gen_ai.operation.name': operationName,
        'gen_ai.request.model': boundedAttribute(target.model),
        'gen_ai.provider.name': target.pool.adapter,
        'gateway.pool_id': target.pool.id,
        'gateway.region': target.pool.region,
        'gateway.endpoint': target.endpointUrl,
      },
    },
    parent,
  );
  try {
    const result = await run(trace.setSpan(parent, span));
    const outcome = outcomeOf(result);
    span.setAttribute('gateway.attempt.outcome', outcome);
    if (outcome !== 'accepted' && outcome !== 'cancelled') span.setStatus({ code: SpanStatusCode.ERROR });
    return result;
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw error;
  } finally {
    span.end();
  }
}
