import { errorEnvelope, gatewayError } from '@gw/errors';
import type { GatewayError, RateLimitWindow, Result } from '@gw/errors';
import { commonv1, eventsv1 } from '@gw/proto';
import type { MessageInitShape } from '@gw/proto';
import type { Clients } from './clients';
import { expiredError } from './in-flight';
import type { InFlightRequests } from './in-flight';
import { windowForRefusal, windowOf } from './rate-limit';
import { restoreMessage, StreamRestoration } from './restoration';
import type { Restoration } from './restoration';
import { parseMessagesBody } from './validation';
import { billableTokens } from './weighting';
import type { TokenCounts } from './weighting';

/** One request as the HTTP edge hands it over. */
export interface CallerRequest {
  requestId: string;
  presentedKey: string;
  sourceAddress: string;
  /** Reads the body, refusing with request_too_large past the limit. */
  readBody(limitBytes: number): Promise<Result<Buffer>>;
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
  /** Privacy mode `flag`: the counts by entity type, sent as `x-privacy-flags`. */
  setPrivacyFlags(header: string): void;
}

export type UsageEventInit = MessageInitShape<typeof eventsv1.UsageEventSchema>;

export interface MessagesDeps {
  clients: Clients;
  inFlight: InFlightRequests;
  /** Hands a usage event to the metering pipeline; resolves once it is durable (or its loss logged), never rejects. */
  recordUsage(event: UsageEventInit): Promise<void>;
  /** One structured line per request: ids and numbers, never content. */
  logRequest(fields: Record<string, unknown>): void;
  /** The body size limit of a plan: the gateway's, or the plan's where that is lower. */
  bodyLimitFor(plan: string): number;
  /** True while usage events cannot be kept (the durable buffer is full): live requests are refused. */
  billingUnavailable(): boolean;
  /** Mode `tokenise`: puts this request's originals back into its completion (kept for this request only). */
  restorationFor(placeholders: { placeholder: string; original: string }[], nonce: string): Restoration;
  /** Mode `flag`: counts entities by type in the metrics. */
  countPrivacyFlags(counts: Record<string, number>): void;
}

/** `x-privacy-flags`: counts by entity type, never values, e.g. `EMAIL=2,PHONE=1`, or `none`. */
export function privacyFlagsHeader(counts: Record<string, number>): string {
  const entries = Object.entries(counts)
    .filter(([, count]) => count > 0)
    .sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0 ? 'none' : entries.map(([type, count]) => `${type}=${count}`).join(',');
}

const noTokens: TokenCounts = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

/** Milliseconds a timer can wait; a key expiring later than that cannot end a request in flight. */
const longestTimerMs = 2 ** 31 - 1;

/** What one request carries through its steps. */
interface RequestScope {
  deps: MessagesDeps;
  request: CallerRequest;
  sink: ResponseSink;
  startedAt: number;
  log(fields: Record<string, unknown>): void;
  refuse(error: GatewayError, fields?: Record<string, unknown>): void;
}

/**
 * POST /v1/messages, in the order of DESIGN.md §1: key, body, policy, limits, router. Nothing is sent
 * upstream before every check has passed; a refusal consumes nothing.
 */
export async function handleMessages(deps: MessagesDeps, request: CallerRequest, sink: ResponseSink): Promise<void> {
  const startedAt = Date.now();
  const log = (fields: Record<string, unknown>) =>
    deps.logRequest({ request_id: request.requestId, duration_ms: Date.now() - startedAt, ...fields });
  const scope: RequestScope = {
    deps,
    request,
    sink,
    startedAt,
    log,
    refuse: (error, fields = {}) => {
      sink.fail(error);
      log({ status: 'refused', error_type: error.type, ...fields });
    },
  };

  const verified = await deps.clients.auth.verifyKey({
    key: request.presentedKey,
    sourceAddress: request.sourceAddress,
  });
  if (!verified.ok) return scope.refuse(verified.error);
  const key = verified.value.key!;
  // From here on, a revocation of the key ends this request wherever it is.
  const registration = deps.inFlight.register(key.keyId);
  try {
    await serve(scope, key, registration.signal);
  } finally {
    registration.unregister();
  }
}

async function serve(scope: RequestScope, key: commonv1.KeyContext, keyRevoked: AbortSignal): Promise<void> {
  const { deps, request, sink } = scope;
  const { clients } = deps;
  const ids = { key_id: key.keyId, account_id: key.accountId };
  // Every answer to an authenticated request says where the caller stands in its window.
  const refuse = async (error: GatewayError, fields: Record<string, unknown>) => {
    const window = await windowForRefusal(clients, key, error);
    if (window) sink.setRateLimit(window);
    scope.refuse(error, fields);
  };

  const raw = await request.readBody(deps.bodyLimitFor(key.plan));
  if (!raw.ok) return refuse(raw.error, ids);
  const body = parseMessagesBody(raw.value);
  if (!body.ok) return refuse(body.error, ids);
  const { model } = body.value;
  const streamed = body.value.stream === true;

  const authorized = await clients.policy.authorize({ key, model, bodyJson: raw.value });
  if (!authorized.ok) return refuse(authorized.error, { ...ids, model });
  const live = key.environment === commonv1.Environment.LIVE;
  if (live && deps.billingUnavailable()) {
    // Never serve what cannot be billed: refuse until usage can be recorded again.
    return refuse(
      gatewayError('overloaded_error', 'The gateway cannot record usage right now. Retry with exponential backoff.', {
        retryAfterMs: 5_000,
      }),
      { ...ids, model },
    );
  }

  const admitted = await clients.quota.acquire({ key, requestId: request.requestId });
  if (!admitted.ok) return refuse(admitted.error, { ...ids, model });
  const lease = admitted.value;
  sink.setRateLimit(windowOf(lease.window!));
  if (key.privacyMode === commonv1.PrivacyMode.FLAG) {
    const counts = Object.fromEntries(
      Object.entries(authorized.value.privacyFlags).map(([type, count]) => [type, Number(count)]),
    );
    sink.setPrivacyFlags(privacyFlagsHeader(counts));
    deps.countPrivacyFlags(counts);
  }
  const restoration =
    authorized.value.placeholders.length > 0
      ? deps.restorationFor(authorized.value.placeholders, authorized.value.placeholderNonce)
      : undefined;
  const streamRestoration = restoration && new StreamRestoration(restoration);
  const leaseRef = { accountId: key.accountId, environment: key.environment, leaseId: lease.leaseId };
  const renewal = setInterval(() => void clients.quota.renew(leaseRef), Math.max(1_000, Number(lease.leaseTtlMs) / 3));

  // The key stops working mid-request when it is revoked or reaches expires_at (to the millisecond).
  const keyStopped = new AbortController();
  const stopOnRevocation = () => keyStopped.abort(keyRevoked.reason);
  keyRevoked.addEventListener('abort', stopOnRevocation, { once: true });
  if (keyRevoked.aborted) stopOnRevocation();
  const untilExpiry = key.expiresAtUnixMs === undefined ? undefined : Number(key.expiresAtUnixMs) - Date.now();
  const expiry =
    untilExpiry !== undefined && untilExpiry <= longestTimerMs
      ? setTimeout(() => keyStopped.abort(expiredError()), Math.max(0, untilExpiry))
      : undefined;
  // The upstream call ends when the client goes away or the key stops working.
  const upstream = AbortSignal.any([request.signal, keyStopped.signal]);

  let started: { poolId: string; region: string } | undefined;
  let tokens = noTokens;
  let failure: GatewayError | undefined;
  let heldStop: string | undefined;
  let heldMessage: Uint8Array | undefined;
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
      { signal: upstream },
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
        case 'sse': {
          const data = Buffer.from(event.value.data).toString('utf8');
          const relayed = streamRestoration
            ? streamRestoration.transform(event.value.event, data)
            : [[event.value.event, data]];
          for (const [name, restored] of relayed) {
            // message_stop completes the response for the client: it waits until the usage is durable.
            if (name === 'message_stop') heldStop = restored;
            else sink.writeEvent(name!, restored!);
          }
          break;
        }
        case 'message':
          // Likewise the whole answer waits for the usage event (the router sends `finished` right after).
          heldMessage = restoration ? restoreMessage(event.value.json, restoration) : event.value.json;
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
    clearTimeout(expiry);
    keyRevoked.removeEventListener('abort', stopOnRevocation);
  }

  const keyStop = keyStopped.signal.aborted ? (keyStopped.signal.reason as GatewayError) : undefined;
  const cancelled = request.signal.aborted && !keyStop;
  if (keyStop) failure = keyStop;
  if (!failure && !cancelled && (!started || (!streamed && !heldMessage))) {
    // The router ended without answering: a failure of the gateway, not of the caller.
    failure = gatewayError('api_error', 'The gateway received no response for this request. Retry once.');
  }

  const billable = live ? billableTokens(tokens) : 0;
  void clients.quota.release({ ...leaseRef, billableTokens: BigInt(billable) });
  // Billing first: no client sees a completed answer whose usage event could still be lost.
  await deps.recordUsage({
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
    outcome: keyStop
      ? eventsv1.Outcome.REVOKED
      : cancelled
        ? eventsv1.Outcome.CLIENT_CANCELLED
        : failure
          ? eventsv1.Outcome.UPSTREAM_ERROR
          : eventsv1.Outcome.SUCCESS,
    errorType: failure?.type ?? '',
    plan: key.plan,
    allowanceTokens: lease.limits?.monthlyTokens ?? 0n,
    overageEnabled: lease.limits?.overage ?? false,
    startedAtUnixMs: BigInt(scope.startedAt),
    endedAtUnixMs: BigInt(Date.now()),
    streamed,
  });
  if (failure && !cancelled) {
    if (started && streamed) {
      sink.writeEvent('error', JSON.stringify(errorEnvelope(failure, request.requestId)));
      sink.endStream();
    } else {
      sink.fail(failure);
    }
  } else if (!cancelled && streamed) {
    if (heldStop !== undefined) sink.writeEvent('message_stop', heldStop);
    sink.endStream();
  } else if (!cancelled && heldMessage) {
    sink.sendJson(heldMessage, started?.region ?? '');
  }
  scope.log({
    ...ids,
    model,
    status: keyStop ? 'key_stopped' : cancelled ? 'cancelled' : failure ? 'failed' : 'ok',
    error_type: failure?.type,
    pool_id: started?.poolId,
    region: started?.region,
    streamed,
    input_tokens: tokens.inputTokens,
    output_tokens: tokens.outputTokens,
    billable_tokens: billable,
  });
}
