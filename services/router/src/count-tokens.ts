import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { requestLogFields } from '@gw/telemetry';
import type { CompletionRequest, JsonObject } from './completion';
import { parseJsonObject } from './completion';
import { bodyForAdapters } from './live-completion';
import { estimateInputTokens } from '@gw/usage';
import { readSmallBody, sendWithFailover } from './failover';
import type { FailoverDeps } from './failover';
import { errorAfterStart } from './upstream-errors';

/** One call of CountTokens, decoded from the wire: a completion request that generates nothing. */
export type CountTokensRequest = Omit<CompletionRequest, 'stream'>;

/** The answer of CountTokens. */
export interface TokenCount {
  inputTokens: number;
  /** True when no upstream counted: `inputTokens` is `estimateInputTokens`. */
  estimated: boolean;
  /** The pool that counted; empty when estimated. */
  poolId: string;
  region: string;
}

const invalidBody = () => gatewayError('invalid_request_error', 'The request body must be a JSON object.');

export function estimatedCount(body: JsonObject): TokenCount {
  return { inputTokens: estimateInputTokens(body), estimated: true, poolId: '', region: '' };
}

/** Test keys: the estimate, never an upstream. */
export function countTokensForTestKey(request: CountTokensRequest): Result<TokenCount> {
  const body = parseJsonObject(request.body);
  return body === undefined ? err(invalidBody()) : ok(estimatedCount(body));
}

/**
 * Live keys: the upstream's count, through the same candidate order, residency checks, failover and
 * error mapping as a completion (`sendWithFailover`). When the first pool able to serve has an
 * adapter that cannot count, the estimate, without a request.
 */
export async function countTokensLive(
  request: CountTokensRequest,
  signal: AbortSignal,
  deps: FailoverDeps,
): Promise<Result<TokenCount>> {
  const caller = bodyForAdapters(request);
  if (caller === undefined) return err(invalidBody());
  const outcome = await sendWithFailover(request, signal, deps, {
    name: 'count_tokens',
    generating: false,
    callFor: (adapter) => {
      const counting = adapter.countTokens;
      if (counting === undefined) return undefined;
      return {
        request: (target) =>
          counting.buildRequest({
            ...target,
            get body() {
              return caller.body;
            },
            rawBody: caller.rawBody,
            layout: caller.layout,
            headers: request.headers,
            query: request.query,
            requestId: request.requestId,
          }),
        accepts: (contentType) => counting.acceptsContentType(contentType),
        parseCount: (text: string) => counting.parseCount(text),
      };
    },
  });
  switch (outcome.kind) {
    case 'cancelled':
      return err(gatewayError('api_error', 'The call was cancelled.'));
    case 'failed':
      return err(outcome.error);
    case 'unsupported':
      deps.logger.info(
        { ...requestLogFields(request), pool_id: outcome.pool.id, adapter: outcome.pool.adapter },
        'pool adapter cannot count tokens: answering the estimate',
      );
      return ok(estimatedCount(caller.body));
    case 'answered': {
      const read = await readSmallBody(outcome.response.body);
      if (read.failure !== undefined) {
        return err(errorAfterStart(read.failure) ?? gatewayError('api_error', 'The call was cancelled.'));
      }
      const count = outcome.call.parseCount(read.text);
      if (!count.ok) {
        deps.logger.warn(
          { ...requestLogFields(request), pool_id: outcome.pool.id },
          'upstream token count is not a count',
        );
        return count;
      }
      return ok({ inputTokens: count.value, estimated: false, poolId: outcome.pool.id, region: outcome.pool.region });
    }
  }
}
