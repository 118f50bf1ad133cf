import { create } from '@bufbuild/protobuf';
import { err, gatewayError, ok } from '@gw/errors';
import type { RateLimitWindow } from '@gw/errors';
import { routerv1 } from '@gw/proto';
import { routerClient } from '../../src/clients/router';
import { handleCountTokens } from '../../src/pipeline/count-tokens';
import type { CountTokensDeps } from '../../src/pipeline/count-tokens';
import type { CallerRequest } from '../../src/pipeline/types';
import { callerRequest, fakes, remainingOf, window } from './fakes';
import type { FakeOptions } from './fakes';

const countBody = { model: 'claude-test', messages: [{ role: 'user', content: 'hello' }] };

/** Counts one request with fakes on every side; the router counts 42 tokens. */
async function count(options: FakeOptions = {}, body: unknown = countBody, request: Partial<CallerRequest> = {}) {
  const world = fakes(options);
  const counted: routerv1.CountTokensRequest[] = [];
  const deps: CountTokensDeps = {
    ...world.shared,
    countTokensTimeoutMs: 1_000,
    router: routerClient(
      {
        ...world.rawRouter,
        countTokens: async (countRequest) => {
          counted.push(create(routerv1.CountTokensRequestSchema, countRequest));
          return ok(create(routerv1.CountTokensResponseSchema, { inputTokens: 42n }));
        },
      },
      () => undefined,
    ),
  };
  let rateLimit: RateLimitWindow | undefined;
  const result = await handleCountTokens(deps, callerRequest(body, request), (value) => (rateLimit = value));
  return { ...world, result, rateLimit, counted };
}

describe('handleCountTokens', () => {
  it('counts with the reserved lease admitted, then releases it with 0 tokens', async () => {
    const { result, rateLimit, quotaCalls, held, released } = await count();
    expect(result).toEqual(ok({ input_tokens: 42 }));
    expect(rateLimit?.remaining).toBe(remainingOf.acquire);
    expect(quotaCalls).toEqual(['reserve', 'acquire lease_1']);
    expect(held).toEqual(['lease_1']);
    expect(released).toEqual([{ leaseId: 'lease_1', billableTokens: 0n }]);
  });

  it('refuses an account at its concurrency before reading the body', async () => {
    const refusal = gatewayError('rate_limit_error', 'Too many concurrent requests.', {
      retryAfterMs: 1_000,
      rateLimit: { ...window, remaining: 7 },
    });
    const readBody = jest.fn();
    const discardBody = jest.fn();
    const { result, rateLimit, quotaCalls, held, counted } = await count({ reserve: err(refusal) }, countBody, {
      readBody,
      discardBody,
    });
    expect(result).toEqual(err(refusal));
    expect(rateLimit).toEqual(refusal.rateLimit);
    expect(readBody).not.toHaveBeenCalled();
    expect(discardBody).toHaveBeenCalledTimes(1);
    expect(quotaCalls).toEqual(['reserve']);
    expect(held).toEqual([]);
    expect(counted).toEqual([]);
  });

  it('refuses a bad body or model with the reserved window, freeing the slot and charging no per-minute slot', async () => {
    for (const [options, body] of [
      [{}, '{"model":'],
      [{ authorize: err(gatewayError('not_found_error', 'no such model')) }, countBody],
    ] as const) {
      const { result, rateLimit, quotaCalls, released, counted } = await count(options, body);
      expect(result.ok).toBe(false);
      expect(rateLimit?.remaining).toBe(remainingOf.reserve);
      expect(quotaCalls).toEqual(['reserve']);
      expect(released).toEqual([{ leaseId: 'lease_1', billableTokens: 0n }]);
      expect(counted).toEqual([]);
    }
  });
});
