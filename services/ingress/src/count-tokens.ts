import { err, ok } from '@gw/errors';
import type { RateLimitWindow, Result } from '@gw/errors';
import { notJsonError } from './pipeline/admit';
import { authenticate } from './pipeline/authenticate';
import type { CallerRequest, GatewayDeps } from './pipeline/types';
import { windowForRefusal, windowOf } from './rate-limit';
import { isJsonContentType, parseCountTokensBody } from './validation';

/**
 * POST /v1/messages/count_tokens: the same checks as a completion (key, body, model, residency,
 * per-minute and concurrency limits), then the count from the upstream or the router's estimate.
 * Nothing is billed.
 */
export async function handleCountTokens(
  deps: GatewayDeps,
  request: CallerRequest,
  setRateLimit: (window: RateLimitWindow) => void,
): Promise<Result<{ input_tokens: number }>> {
  const { clients } = deps;
  const verified = await authenticate(deps.keys, request);
  if (!verified.ok) return verified;
  const key = verified.value;
  const refuse = async (failure: Result<never>) => {
    if (failure.ok) return failure;
    const window = await windowForRefusal(clients.quota, key, failure.error, request.requestId);
    if (window) setRateLimit(window);
    return failure;
  };
  if (!isJson(request)) {
    request.discardBody();
    return refuse(err(notJsonError()));
  }
  const raw = await request.readBody(deps.bodyLimitFor(key.plan));
  if (!raw.ok) return refuse(raw);
  const body = parseCountTokensBody(raw.value);
  if (!body.ok) return refuse(body);
  const authorized = await deps.authorize(key, body.value.model, raw.value, request.requestId);
  if (!authorized.ok) return refuse(authorized);
  const admitted = await clients.quota.acquire({ key, requestId: request.requestId }, { requestId: request.requestId });
  if (!admitted.ok) return refuse(admitted);
  setRateLimit(windowOf(admitted.value.window!));
  const lease = deps.leases.hold(
    {
      accountId: key.accountId,
      environment: key.environment,
      leaseId: admitted.value.leaseId,
    },
    Number(admitted.value.leaseTtlMs),
  );
  try {
    const counted = await clients.router.countTokens(
      {
        requestId: request.requestId,
        key,
        model: body.value.model,
        pools: authorized.value.pools,
        bodyJson: authorized.value.bodyJson ?? raw.value,
        headers: request.protocolHeaders,
      },
      { signal: request.signal, requestId: request.requestId, timeoutMs: deps.countTokensTimeoutMs },
    );
    if (!counted.ok) return refuse(counted);
    deps.logRequest({
      request_id: request.requestId,
      key_id: key.keyId,
      account_id: key.accountId,
      model: body.value.model,
      status: 'ok',
      endpoint: 'count_tokens',
      pool_id: counted.value.poolId || undefined,
      estimated: counted.value.estimated,
    });
    return ok({ input_tokens: Number(counted.value.inputTokens) });
  } finally {
    lease.release(0n);
  }
}

const isJson = (request: CallerRequest) => isJsonContentType(request.contentType);
