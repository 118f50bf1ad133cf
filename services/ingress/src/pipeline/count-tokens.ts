import { err, ok } from '@gw/errors';
import type { RateLimitWindow, Result } from '@gw/errors';
import type { Clients } from '../clients';
import { notJsonError } from './admit';
import { authenticate } from './authenticate';
import { reserve } from './reserve';
import type { Reservation } from './reserve';
import { callScope } from './types';
import type { CallerRequest, GatewayDeps, PipelineClients } from './types';
import { windowForRefusal, windowOf } from '../domain/rate-limit';
import { isJsonContentType } from '../domain/validation';

/** What a token count needs of the gateway. */
export type CountTokensDeps = Pick<
  GatewayDeps,
  'keys' | 'authorize' | 'leases' | 'bodyLimitFor' | 'checkBody' | 'logRequest' | 'countTokensTimeoutMs'
> & { clients: Pick<PipelineClients, 'quota'> & { router: Pick<Clients['router'], 'countTokens'> } };

/**
 * POST /v1/messages/count_tokens: the same checks as a completion (key, a concurrency slot reserved
 * before the body, body, model, residency, the per-minute window), then the count from the upstream or
 * the router's estimate. Nothing is billed; the slot is released whatever ends the count.
 */
export async function handleCountTokens(
  deps: CountTokensDeps,
  request: CallerRequest,
  setRateLimit: (window: RateLimitWindow) => void,
): Promise<Result<{ input_tokens: number }>> {
  const { clients } = deps;
  const verified = await authenticate(deps.keys, request);
  if (!verified.ok) return verified;
  const key = verified.value;
  const refuse = async (failure: Result<never>, reservation?: Reservation) => {
    if (failure.ok) return failure;
    const window = await windowForRefusal(clients.quota, key, failure.error, request, reservation?.window);
    if (window) setRateLimit(window);
    return failure;
  };
  const reserved = await reserve(clients.quota, key, request);
  if (!reserved.ok) {
    request.discardBody();
    return refuse(reserved);
  }
  const reservation = reserved.value;
  const lease = deps.leases.hold(reservation.lease, reservation.leaseTtlMs);
  try {
    if (!isJson(request)) {
      request.discardBody();
      return await refuse(err(notJsonError()), reservation);
    }
    const raw = await request.readBody(deps.bodyLimitFor(key.plan));
    if (!raw.ok) return await refuse(raw, reservation);
    const body = await deps.checkBody('count_tokens', raw.value, key.accountId);
    if (!body.ok) return await refuse(body, reservation);
    const authorized = await deps.authorize(key, body.value.model, raw.value, request);
    if (!authorized.ok) return await refuse(authorized, reservation);
    const admitted = await clients.quota.acquire(
      { key, requestId: request.requestId, leaseId: reservation.lease.leaseId },
      callScope(request),
    );
    if (!admitted.ok) return await refuse(admitted, reservation);
    setRateLimit(windowOf(admitted.value.window!));
    const counted = await clients.router.countTokens(
      {
        requestId: request.requestId,
        key,
        model: body.value.model,
        pools: authorized.value.pools,
        bodyJson: authorized.value.bodyJson ?? raw.value,
        headers: request.protocolHeaders,
        query: request.query,
      },
      { ...callScope(request), signal: request.signal, timeoutMs: deps.countTokensTimeoutMs },
    );
    // The admitted window is in the headers already.
    if (!counted.ok) return counted;
    deps.logRequest(request, {
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
