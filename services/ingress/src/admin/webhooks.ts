import type express from 'express';
import { ok } from '@gw/errors';
import type { webhooksv1 } from '@gw/proto';
import { adminRoute, json } from './handlers';
import type { Principal } from './principal';
import { requireAccount } from './principal';
import { createEndpointBody, parseBody } from './requests';
import type { AdminRoutesOptions } from './routes';

const isoOrNull = (unixMs: bigint | undefined) =>
  unixMs === undefined ? null : new Date(Number(unixMs)).toISOString();

/** An endpoint as the admin API shows it: never its secret (only the answers that make one carry it). */
export function endpointResource(endpoint: webhooksv1.WebhookEndpoint) {
  return {
    id: endpoint.id,
    account_id: endpoint.accountId,
    url: endpoint.url,
    event_types: endpoint.eventTypes,
    thresholds_percent: endpoint.thresholdsPercent,
    expiring_within_days: endpoint.expiringWithinDays,
    created_at: isoOrNull(endpoint.createdAtUnixMs),
    previous_secret_until: isoOrNull(endpoint.previousSecretUntilUnixMs),
  };
}

export function deliveryResource(delivery: webhooksv1.Delivery) {
  return {
    id: delivery.id,
    endpoint_id: delivery.endpointId,
    event_type: delivery.eventType,
    status: delivery.status,
    created_at: isoOrNull(delivery.createdAtUnixMs),
    attempts: delivery.attempts,
    next_attempt_at: isoOrNull(delivery.nextAttemptAtUnixMs),
    delivered_at: isoOrNull(delivery.deliveredAtUnixMs),
    payload: JSON.parse(delivery.payloadJson || 'null') as unknown,
    attempt_log: delivery.attemptLog.map((attempt) => ({
      attempted_at: isoOrNull(attempt.attemptedAtUnixMs),
      status_code: attempt.statusCode === 0 ? null : attempt.statusCode,
      error: attempt.error || null,
      duration_ms: attempt.durationMs,
    })),
  };
}

type Webhooks = AdminRoutesOptions['clients']['webhooks'];

/** An endpoint the caller may see, or 404 for one of another account. */
async function visibleEndpoint(webhooks: Webhooks, principal: Principal, endpointId: string) {
  const found = await webhooks.getEndpoint({ endpointId });
  if (!found.ok) return found;
  const endpoint = found.value.endpoint!;
  const allowed = requireAccount(principal, endpoint.accountId, 'webhook endpoint');
  return allowed.ok ? ok(endpoint) : allowed;
}

/** An account's webhook endpoints, their secrets and delivery log (docs/admin-api.md); metering decides. */
export function mountWebhookRoutes(router: express.Router, options: AdminRoutesOptions): void {
  mountEndpointRoutes(router, options);
  mountDeliveryRoutes(router, options);
}

function mountEndpointRoutes(router: express.Router, options: AdminRoutesOptions): void {
  const route = adminRoute(options);
  const { webhooks } = options.clients;

  router.post(
    '/accounts/:id/webhooks',
    route(async (request, principal) => {
      const accountId = String(request.params.id);
      const allowed = requireAccount(principal, accountId);
      if (!allowed.ok) return allowed;
      const body = parseBody(createEndpointBody, request.body);
      if (!body.ok) return body;
      const created = await webhooks.createEndpoint({
        accountId,
        url: body.value.url,
        eventTypes: body.value.event_types,
        thresholdsPercent: body.value.thresholds_percent ?? [],
        expiringWithinDays: body.value.expiring_within_days ?? 0,
      });
      if (!created.ok) return created;
      return json({ ...endpointResource(created.value.endpoint!), secret: created.value.secret }, 201);
    }),
  );

  router.get(
    '/accounts/:id/webhooks',
    route(async (request, principal) => {
      const accountId = String(request.params.id);
      const allowed = requireAccount(principal, accountId);
      if (!allowed.ok) return allowed;
      const account = await options.clients.auth.getAccount({ id: accountId });
      if (!account.ok) return account;
      const listed = await webhooks.listEndpoints({ accountId });
      return listed.ok ? json({ data: listed.value.endpoints.map(endpointResource) }) : listed;
    }),
  );

  router.get(
    '/webhooks/:id',
    route(async (request, principal) => {
      const endpoint = await visibleEndpoint(webhooks, principal, String(request.params.id));
      return endpoint.ok ? json(endpointResource(endpoint.value)) : endpoint;
    }),
  );

  router.delete(
    '/webhooks/:id',
    route(async (request, principal) => {
      const endpoint = await visibleEndpoint(webhooks, principal, String(request.params.id));
      if (!endpoint.ok) return endpoint;
      const deleted = await webhooks.deleteEndpoint({ endpointId: endpoint.value.id });
      return deleted.ok ? json(endpointResource(deleted.value.endpoint!)) : deleted;
    }),
  );

  router.post(
    '/webhooks/:id/rotate-secret',
    route(async (request, principal) => {
      const endpoint = await visibleEndpoint(webhooks, principal, String(request.params.id));
      if (!endpoint.ok) return endpoint;
      const rotated = await webhooks.rotateSecret({ endpointId: endpoint.value.id });
      if (!rotated.ok) return rotated;
      return json({ ...endpointResource(rotated.value.endpoint!), secret: rotated.value.secret });
    }),
  );
}

function mountDeliveryRoutes(router: express.Router, options: AdminRoutesOptions): void {
  const route = adminRoute(options);
  const { webhooks } = options.clients;

  router.get(
    '/webhooks/:id/deliveries',
    route(async (request, principal) => {
      const endpoint = await visibleEndpoint(webhooks, principal, String(request.params.id));
      if (!endpoint.ok) return endpoint;
      const limit = Number(request.query.limit ?? 50);
      const listed = await webhooks.listDeliveries({
        endpointId: endpoint.value.id,
        limit: Number.isInteger(limit) && limit > 0 ? Math.min(limit, 200) : 50,
      });
      return listed.ok ? json({ data: listed.value.deliveries.map(deliveryResource) }) : listed;
    }),
  );

  router.post(
    '/webhooks/:id/deliveries/:messageId/resend',
    route(async (request, principal) => {
      const endpoint = await visibleEndpoint(webhooks, principal, String(request.params.id));
      if (!endpoint.ok) return endpoint;
      const resent = await webhooks.resend({
        endpointId: endpoint.value.id,
        messageId: String(request.params.messageId),
      });
      return resent.ok ? json(deliveryResource(resent.value.delivery!)) : resent;
    }),
  );
}
