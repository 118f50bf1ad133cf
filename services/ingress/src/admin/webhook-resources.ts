import type { Delivery, WebhookEndpoint } from '@gw/admin-api';
import type { webhooksv1 } from '@gw/proto';

const isoOrNull = (unixMs: bigint | undefined) =>
  unixMs === undefined ? null : new Date(Number(unixMs)).toISOString();

/** An endpoint as the admin API shows it: never its secret (only the answers that make one carry it). */
export function endpointResource(endpoint: webhooksv1.WebhookEndpoint): WebhookEndpoint {
  return {
    id: endpoint.id,
    account_id: endpoint.accountId,
    url: endpoint.url,
    event_types: endpoint.eventTypes as WebhookEndpoint['event_types'],
    thresholds_percent: endpoint.thresholdsPercent,
    expiring_within_days: endpoint.expiringWithinDays,
    created_at: isoOrNull(endpoint.createdAtUnixMs),
    previous_secret_until: isoOrNull(endpoint.previousSecretUntilUnixMs),
  };
}

/** A delivery and its attempts; the payload is the event's body as metering stored it (checked on the way out). */
export function deliveryResource(delivery: webhooksv1.Delivery): Delivery {
  return {
    id: delivery.id,
    endpoint_id: delivery.endpointId,
    event_type: delivery.eventType as Delivery['event_type'],
    status: delivery.status as Delivery['status'],
    created_at: isoOrNull(delivery.createdAtUnixMs),
    attempts: delivery.attempts,
    next_attempt_at: isoOrNull(delivery.nextAttemptAtUnixMs),
    delivered_at: isoOrNull(delivery.deliveredAtUnixMs),
    payload: JSON.parse(delivery.payloadJson || 'null') as Delivery['payload'],
    attempt_log: delivery.attemptLog.map((attempt) => ({
      attempted_at: isoOrNull(attempt.attemptedAtUnixMs),
      status_code: attempt.statusCode === 0 ? null : attempt.statusCode,
      error: attempt.error || null,
      duration_ms: attempt.durationMs,
    })),
  };
}
