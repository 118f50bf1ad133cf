import type { Pool } from '@gw/db';
import { registration } from '@gw/grpc';
import { dependencyUnavailableError, err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { webhooksv1 } from '@gw/proto';
import { EndpointStore, listDeliveries, resendMessage } from './endpoints';
import type { DeliveryRecord, EndpointRecord } from './endpoints';
import { eventTypes } from './outbox';
import { parseEndpointUrl, vetTarget } from './targets';
import type { TargetPolicy } from './targets';

export interface WebhookServiceDeps {
  pool: Pool;
  policy: TargetPolicy;
  retryWindowMs: number;
  onStoreFailure(error: unknown): void;
}

const maxEndpointsPerAccount = 10;
const maxThresholds = 10;
const defaultThresholds = [80, 100];
const defaultExpiringWithinDays = 7;
/** How long a rotated-out secret keeps signing beside the new one. */
const rotationGraceMs = 24 * 60 * 60 * 1000;

const invalid = (message: string) => err(gatewayError('invalid_request_error', message));
const endpointNotFound = () => err(gatewayError('not_found_error', 'No webhook endpoint with that id.'));
const unixMs = (date: Date | null) => (date === null ? undefined : BigInt(date.getTime()));

function endpointMessage(record: EndpointRecord) {
  return {
    id: record.id,
    accountId: record.accountId,
    url: record.url,
    eventTypes: record.eventTypes,
    thresholdsPercent: record.thresholdsPercent,
    expiringWithinDays: record.expiringWithinDays,
    createdAtUnixMs: BigInt(record.createdAt.getTime()),
    previousSecretUntilUnixMs: unixMs(record.previousSecretUntil),
    deletedAtUnixMs: unixMs(record.deletedAt),
  };
}

function deliveryMessage(record: DeliveryRecord) {
  return {
    id: record.id,
    endpointId: record.endpointId,
    eventType: record.eventType,
    status: record.status,
    createdAtUnixMs: BigInt(record.createdAt.getTime()),
    attempts: record.attempts,
    nextAttemptAtUnixMs: unixMs(record.nextAttemptAt),
    deliveredAtUnixMs: unixMs(record.deliveredAt),
    payloadJson: record.payload,
    attemptLog: record.attemptLog.map((attempt) => ({
      attemptedAtUnixMs: BigInt(attempt.attemptedAt.getTime()),
      statusCode: attempt.statusCode ?? 0,
      error: attempt.error ?? '',
      durationMs: attempt.durationMs,
    })),
  };
}

/** The event types, thresholds and notice period of a new endpoint, checked and defaulted. */
export function subscription(
  request: Pick<webhooksv1.CreateEndpointRequest, 'eventTypes' | 'thresholdsPercent' | 'expiringWithinDays'>,
): Result<{ eventTypes: string[]; thresholdsPercent: number[]; expiringWithinDays: number }> {
  if (request.eventTypes.length === 0) return invalid(`event_types: expected one or more of ${eventTypes.join(', ')}.`);
  for (const [index, type] of request.eventTypes.entries()) {
    if (!(eventTypes as readonly string[]).includes(type)) {
      return invalid(`event_types.${index}: expected one of ${eventTypes.join(', ')}.`);
    }
  }
  const thresholds = [...new Set(request.thresholdsPercent)].sort((a, b) => a - b);
  if (thresholds.length > maxThresholds) return invalid(`thresholds_percent: at most ${maxThresholds}.`);
  if (thresholds.some((percent) => percent < 1 || percent > 1000)) {
    return invalid('thresholds_percent: each a whole percentage from 1 to 1000.');
  }
  const days = request.expiringWithinDays === 0 ? defaultExpiringWithinDays : request.expiringWithinDays;
  if (days < 1 || days > 90) return invalid('expiring_within_days: expected 1 to 90.');
  const wantsThresholds = request.eventTypes.includes('usage.threshold_crossed');
  return ok({
    eventTypes: [...new Set(request.eventTypes)],
    thresholdsPercent: wantsThresholds && thresholds.length === 0 ? defaultThresholds : thresholds,
    expiringWithinDays: days,
  });
}

/** Runs a handler, turning a store failure into a retryable refusal instead of a fault. */
function guarded<Request, Response>(
  onFailure: (error: unknown) => void,
  handler: (request: Request) => Promise<Result<Response>>,
): (request: Request) => Promise<Result<Response>> {
  return async (request) => {
    try {
      return await handler(request);
    } catch (error) {
      onFailure(error);
      return err(dependencyUnavailableError('webhook store'));
    }
  };
}

export function webhookService(deps: WebhookServiceDeps) {
  const store = new EndpointStore(deps.pool);
  const guard = <Request, Response>(handler: (request: Request) => Promise<Result<Response>>) =>
    guarded(deps.onStoreFailure, handler);
  const found = async (endpointId: string) => {
    const endpoint = await store.get(endpointId);
    return endpoint ? ok(endpoint) : endpointNotFound();
  };

  return registration(webhooksv1.WebhookService, {
    createEndpoint: guard(async (request: webhooksv1.CreateEndpointRequest) => {
      const url = parseEndpointUrl(request.url);
      if (!url.ok) return url;
      const chosen = subscription(request);
      if (!chosen.ok) return chosen;
      const { rows } = await deps.pool.query('SELECT 1 FROM accounts WHERE id = $1', [request.accountId]);
      if (rows.length === 0) return err(gatewayError('not_found_error', 'No account with that id.'));
      if ((await store.countLive(request.accountId)) >= maxEndpointsPerAccount) {
        return invalid(`An account has at most ${maxEndpointsPerAccount} webhook endpoints; delete one first.`);
      }
      // Refused now rather than at every delivery: the name must resolve, to public addresses only.
      const target = await vetTarget(url.value, deps.policy);
      if (!target.ok) return target;
      const created = await store.create({ accountId: request.accountId, url: url.value.href, ...chosen.value });
      return ok({ endpoint: endpointMessage(created.endpoint), secret: created.secret });
    }),
    listEndpoints: guard(async (request: webhooksv1.ListEndpointsRequest) =>
      ok({ endpoints: (await store.list(request.accountId)).map(endpointMessage) }),
    ),
    getEndpoint: guard(async (request: webhooksv1.GetEndpointRequest) => {
      const endpoint = await found(request.endpointId);
      return endpoint.ok ? ok({ endpoint: endpointMessage(endpoint.value) }) : endpoint;
    }),
    deleteEndpoint: guard(async (request: webhooksv1.DeleteEndpointRequest) => {
      const endpoint = await store.delete(request.endpointId);
      return endpoint ? ok({ endpoint: endpointMessage(endpoint) }) : endpointNotFound();
    }),
    rotateSecret: guard(async (request: webhooksv1.RotateSecretRequest) => {
      const rotated = await store.rotateSecret(request.endpointId, rotationGraceMs);
      return rotated ? ok({ endpoint: endpointMessage(rotated.endpoint), secret: rotated.secret }) : endpointNotFound();
    }),
    listDeliveries: guard(async (request: webhooksv1.ListDeliveriesRequest) => {
      const endpoint = await found(request.endpointId);
      if (!endpoint.ok) return endpoint;
      const limit = request.limit <= 0 ? 50 : Math.min(request.limit, 200);
      const deliveries = await listDeliveries(deps.pool, endpoint.value.id, limit);
      return ok({ deliveries: deliveries.map(deliveryMessage) });
    }),
    resend: guard(async (request: webhooksv1.ResendRequest) => {
      const endpoint = await found(request.endpointId);
      if (!endpoint.ok) return endpoint;
      if (endpoint.value.deletedAt !== null) return invalid('This endpoint is deleted.');
      const delivery = await resendMessage(deps.pool, endpoint.value.id, request.messageId, deps.retryWindowMs);
      return delivery
        ? ok({ delivery: deliveryMessage(delivery) })
        : err(gatewayError('not_found_error', 'No delivery with that id for this endpoint.'));
    }),
  });
}
