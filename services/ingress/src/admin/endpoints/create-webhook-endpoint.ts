import { adminApi } from '@gw/admin-api';
import { requireAccount } from '../principal';
import { json, serve } from '../route-kit';
import { endpointResource } from '../webhook-resources';

/** Metering vets the URL and the event types; the secret is in this answer only. */
export const createWebhookEndpoint = serve(
  adminApi.createWebhookEndpoint,
  async ({ params, body }, { principal, clients }) => {
    const allowed = requireAccount(principal, params.id);
    if (!allowed.ok) return allowed;
    const created = await clients.webhooks.createEndpoint({
      accountId: params.id,
      url: body.url,
      eventTypes: body.event_types,
      thresholdsPercent: body.thresholds_percent ?? [],
      expiringWithinDays: body.expiring_within_days ?? 0,
    });
    if (!created.ok) return created;
    return json({ ...endpointResource(created.value.endpoint!), secret: created.value.secret });
  },
);
