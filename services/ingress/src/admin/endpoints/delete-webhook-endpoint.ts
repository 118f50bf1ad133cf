import { adminApi } from '@gw/admin-api';
import { json, serve } from '../route-kit';
import { visibleEndpoint } from '../visibility';
import { endpointResource } from '../webhook-resources';

/** Nothing more is delivered to it; its pending messages fail. */
export const deleteWebhookEndpoint = serve(
  adminApi.deleteWebhookEndpoint,
  async ({ params }, { principal, clients }) => {
    const endpoint = await visibleEndpoint(clients, principal, params.id);
    if (!endpoint.ok) return endpoint;
    const deleted = await clients.webhooks.deleteEndpoint({ endpointId: endpoint.value.id });
    return deleted.ok ? json(endpointResource(deleted.value.endpoint!)) : deleted;
  },
);
