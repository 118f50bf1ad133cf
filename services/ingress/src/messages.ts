import { errorEnvelope, gatewayError } from '@gw/errors';
import type { GatewayError, RateLimitWindow, Result } from '@gw/errors';
import { commonv1, eventsv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import type { Clients } from './clients';
import { parseMessagesBody } from './validation';
import { billableTokens } from './weighting';
import type { TokenCounts } from './weighting';

/** One request as the HTTP edge hands it over. */
export interface MessagesRequest {
  requestId: string;
  presentedKey: string;
  sourceAddress: string;
  /** Reads the body, refusing with request_too_large past the limit. */
  readBody(): Promise<Result<Buffer>>;
  /** Upstream protocol headers to pass on (anthropic-version, anthropic-beta). */
  protocolHeaders: Record<string, string>;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

/** Where the response goes; the HTTP edge implements it. */
export interface ResponseSink {
  /** Rate-limit position, sent with whatever response follows. */
  setRateLimit(window: RateLimitWindow): void;
  /** Fails the request before anything was sent. */
  fail(error: GatewayError): void;
  sendJson(body: Uint8Array, region: string): void;
  startStream(region: string): void;
  /** Writes one whole SSE event. */
  writeEvent(event: string, data: string): void;
  endStream(): void;
}

export type UsageEventInit = MessageInitShape<typeof eventsv1.UsageEventSchema>;

export interface MessagesDeps {
  clients: Clients;
  /** Hands a usage event to the metering pipeline; never throws. */
  recordUsage(event: UsageEventInit): void;
  /** One structured line per request: ids and numbers, never content. */
  logRequest(fields: Record<string, unknown>): void;
}

const noTokens: TokenCounts = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

/**
 * POST /v1/messages, in the order of DESIGN.md §1: key, body, policy, limits, router. Nothing is sent
 * upstream before every check has passed; a refusal consumes nothing.
 */
export async function handleMessages(deps: MessagesDeps, request: MessagesRequest, sink: ResponseSink): Promise<void> {
  const startedAt = Date.now();
  const { clients } = deps;
  const log = (fields: Record<string, unknown>) =>
    deps.logRequest({ request_id: request.requestId, duration_ms: Date.now() - startedAt, ...fields });
  const refuse = (error: GatewayError, fields: Record<string, unknown> = {}) => {
    sink.fail(error);
    log({ status: 'refused', error_type: error.type, ...fields });
  };

  const verified = await clients.auth.verifyKey({ key: request.presentedKey, sourceAddress: request.sourceAddress });
  if (!verified.ok) return refuse(verified.error);
  const key = verified.value.key!;
  const ids = { key_id: key.keyId, account_id: key.accountId };

  const raw = await request.readBody();
  if (!raw.ok) return refuse(raw.error, ids);
  const body = parseMessagesBody(raw.value);
  if (!body.ok) return refuse(body.error, ids);
  const { model } = body.value;
  const streamed = body.value.stream === true;

  const authorized = await clients.policy.authorize({ key, model, bodyJson: raw.value });
  if (!authorized.ok) return refuse(authorized.error, { ...ids, model });

  const admitted = await clients.quota.acquire({
    accountId: key.accountId,
    environment: key.environment,
    requestId: request.requestId,
    plan: key.plan,
  });
  if (!admitted.ok) {
    if (admitted.error.rateLimit) sink.setRateLimit(admitted.error.rateLimit);
    return refuse(admitted.error, { ...ids, model });
  }
  const lease = admitted.value;
  const window = lease.window!;
  sink.setRateLimit({
    limit: Number(window.limit),
    remaining: Number(window.remaining),
    resetUnixMs: Number(window.resetUnixMs),
  });
  const leaseRef = { accountId: key.accountId, environment: key.environment, leaseId: lease.leaseId };
  const renewal = setInterval(() => void clients.quota.renew(leaseRef), Math.max(1_000, Number(lease.leaseTtlMs) / 3));

  const upstream = new AbortController();
  const cancel = () => upstream.abort();
  request.signal.addEventListener('abort', cancel, { once: true });

  let started: { poolId: string; region: string } | undefined;
  let tokens = noTokens;
  let failure: GatewayError | undefined;
  try {
    const events = clients.router.complete(
      {
        requestId: request.requestId,
        key,
        model,
        pools: authorized.value.pools,
        bodyJson: authorized.value.bodyJson ?? raw.value,
        stream: streamed,
        headers: request.protocolHeaders,
      },
      { signal: upstream.signal },
    );
    for await (const item of events) {
      if (!item.ok) {
        failure = item.error;
        break;
      }
      const event = item.value.event;
      switch (event.case) {
        case 'started':
          started = { poolId: event.value.poolId, region: event.value.region };
          if (streamed) sink.startStream(started.region);
          break;
        case 'sse':
          sink.writeEvent(event.value.event, Buffer.from(event.value.data).toString('utf8'));
          break;
        case 'message':
          sink.sendJson(event.value.json, started?.region ?? '');
          break;
        case 'finished': {
          const usage = event.value.usage;
          if (usage) {
            tokens = {
              inputTokens: Number(usage.inputTokens),
              outputTokens: Number(usage.outputTokens),
              cacheReadInputTokens: Number(usage.cacheReadInputTokens),
              cacheCreationInputTokens: Number(usage.cacheCreationInputTokens),
            };
          }
          break;
        }
        default:
          break;
      }
    }
  } finally {
    clearInterval(renewal);
    request.signal.removeEventListener('abort', cancel);
  }

  const cancelled = request.signal.aborted;
  if (failure && !cancelled) {
    if (started && streamed) {
      sink.writeEvent('error', JSON.stringify(errorEnvelope(failure, request.requestId)));
      sink.endStream();
    } else {
      sink.fail(failure);
    }
  } else if (streamed && started && !cancelled) {
    sink.endStream();
  } else if (!started && !cancelled) {
    // The router ended without answering: a failure of the gateway, not of the caller.
    failure = gatewayError('api_error', 'The gateway received no response for this request. Retry once.');
    sink.fail(failure);
  }

  void clients.quota.release({ ...leaseRef, billableTokens: 0n });
  const live = key.environment === commonv1.Environment.LIVE;
  const billable = live ? billableTokens(tokens) : 0;
  deps.recordUsage({
    eventId: request.requestId,
    accountId: key.accountId,
    keyId: key.keyId,
    environment: key.environment,
    model,
    poolId: started?.poolId ?? '',
    region: started?.region ?? '',
    inputTokens: BigInt(tokens.inputTokens),
    outputTokens: BigInt(tokens.outputTokens),
    cacheReadInputTokens: BigInt(tokens.cacheReadInputTokens),
    cacheCreationInputTokens: BigInt(tokens.cacheCreationInputTokens),
    billableTokens: BigInt(billable),
    outcome: cancelled
      ? eventsv1.Outcome.CLIENT_CANCELLED
      : failure
        ? eventsv1.Outcome.UPSTREAM_ERROR
        : eventsv1.Outcome.SUCCESS,
    errorType: failure?.type ?? '',
    startedAtUnixMs: BigInt(startedAt),
    endedAtUnixMs: BigInt(Date.now()),
    streamed,
  });
  log({
    ...ids,
    model,
    status: cancelled ? 'cancelled' : failure ? 'failed' : 'ok',
    error_type: failure?.type,
    pool_id: started?.poolId,
    region: started?.region,
    streamed,
    input_tokens: tokens.inputTokens,
    output_tokens: tokens.outputTokens,
    billable_tokens: billable,
  });
}
