import { err } from '@gw/errors';
import type { Result } from '@gw/errors';
import { KeyEnvironment } from '@gw/vocabulary';
import { tooManyBodies } from '@gw/workers';
import type { BodyBudget } from '@gw/workers';
import { annotateSpan, boundedAttribute, requestLogFields } from '@gw/telemetry';
import type { CompletionRequest, CompletionStream, TokenUsage } from './completion';
import { countTokensForTestKey, countTokensLive } from './count-tokens';
import type { CountTokensRequest, TokenCount } from './count-tokens';
import { completeLive } from './live-completion';
import type { LiveCompletionDeps } from './live-completion';
import { answerWithTestStub } from './test-stub';
import type { StubPlan, TestStubOptions } from './test-stub';

export interface RouterDeps extends LiveCompletionDeps {
  testStub: TestStubOptions;
  /** Reads a test key's request into the stub's plan (StubPlans: large bodies off the event loop). */
  planStub(request: CompletionRequest, signal: AbortSignal): Promise<StubPlan>;
  /** The request bodies every call holds, capped: a call whose body would pass the cap is refused (503). */
  bodies: BodyBudget;
}

export interface Router {
  complete(request: CompletionRequest, signal: AbortSignal): CompletionStream;
  countTokens(request: CountTokensRequest, signal: AbortSignal): Promise<Result<TokenCount>>;
}

/** How a completion ended, in the metrics, the call's span and one log line: never its text. */
function reportCompletion(
  { logger, metrics }: Pick<RouterDeps, 'logger' | 'metrics'>,
  request: CompletionRequest,
  ended: { poolId: string; outcome: string; firstByteMs: number | undefined; durationMs: number; usage?: TokenUsage },
): void {
  const { poolId, outcome, usage } = ended;
  metrics.completion({ environment: request.environment, poolId, outcome }, ended.durationMs / 1000, usage);
  // The call's span (the gRPC server span): what the completion came to, never its text.
  annotateSpan(request.traceContext, {
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': boundedAttribute(request.model),
    'gen_ai.usage.input_tokens': usage?.inputTokens,
    'gen_ai.usage.output_tokens': usage?.outputTokens,
    'gateway.pool_id': poolId,
    'gateway.outcome': outcome,
  });
  logger.info(
    {
      ...requestLogFields(request),
      environment: request.environment,
      model: request.model,
      stream: request.stream,
      pool_id: poolId,
      outcome,
      first_byte_ms: ended.firstByteMs,
      duration_ms: ended.durationMs,
      input_tokens: usage?.inputTokens,
      output_tokens: usage?.outputTokens,
      cache_read_input_tokens: usage?.cacheReadInputTokens,
      cache_creation_input_tokens: usage?.cacheCreationInputTokens,
    },
    'completion ended',
  );
}

/**
 * Test keys go to the stub (or the estimate), live keys upstream. Every call ends with one log line:
 * ids, pool, outcome, timings and token counts, never text; completions also with their metrics. A call
 * holds its body's bytes in `bodies` until it ends, or is refused at once when they do not fit.
 */
export function createRouter(deps: RouterDeps): Router {
  const { logger } = deps;
  async function* answer(request: CompletionRequest, signal: AbortSignal): CompletionStream {
    const held = deps.bodies.reservation();
    if (!held.take(request.body.byteLength)) {
      yield err(tooManyBodies());
      return;
    }
    try {
      yield* request.environment === KeyEnvironment.test
        ? answerWithTestStub(request, await deps.planStub(request, signal), signal, deps.testStub)
        : completeLive(request, signal, deps);
    } finally {
      held.release();
    }
  }
  return {
    async *complete(request, signal) {
      const began = performance.now();
      let poolId = '';
      let firstByteMs: number | undefined;
      let usage: TokenUsage | undefined;
      let outcome = 'incomplete';
      const source = answer(request, signal);
      try {
        for await (const item of source) {
          if (!item.ok) outcome = item.error.type;
          else if (item.value.kind === 'started') {
            poolId = item.value.poolId;
            firstByteMs = Math.round(performance.now() - began);
          } else if (item.value.kind === 'finished') {
            usage = item.value.usage;
            outcome = 'ok';
          }
          yield item;
        }
      } finally {
        if (outcome === 'incomplete' && signal.aborted) outcome = 'cancelled';
        const durationMs = Math.round(performance.now() - began);
        reportCompletion(deps, request, { poolId, outcome, firstByteMs, durationMs, usage });
      }
    },

    async countTokens(request, signal) {
      const began = performance.now();
      const held = deps.bodies.reservation();
      let result: Result<TokenCount>;
      if (!held.take(request.body.byteLength)) result = err(tooManyBodies());
      else {
        try {
          result =
            request.environment === KeyEnvironment.test
              ? countTokensForTestKey(request)
              : await countTokensLive(request, signal, deps);
        } finally {
          held.release();
        }
      }
      const count = result.ok ? result.value : undefined;
      logger.info(
        {
          ...requestLogFields(request),
          environment: request.environment,
          model: request.model,
          pool_id: count?.poolId,
          region: count?.region,
          outcome: result.ok ? 'ok' : signal.aborted ? 'cancelled' : result.error.type,
          estimated: count?.estimated,
          input_tokens: count?.inputTokens,
          duration_ms: Math.round(performance.now() - began),
        },
        'count_tokens ended',
      );
      return result;
    },
  };
}
