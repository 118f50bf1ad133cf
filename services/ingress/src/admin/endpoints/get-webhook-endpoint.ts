import { adminApi } from '@gw/admin-api';
import { json, serve } from '../route-kit';
import { visibleEndpoint } from '../visibility';
import { endpointResource } from '../webhook-resources';

export const getWebhookEndpoint = serve(adminApi.getWebhookEndpoint, async ({ params }, { principal, clients }) => {
  const endpoint = await visibleEndpoint(clients, principal, params.id);
  return endpoint.ok ? json(endpointResource(endpoint.value)) : endpoint;
});
