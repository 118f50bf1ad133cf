import { adminApi } from '@gw/admin-api';
import { json, serve } from '../route-kit';
import { visibleEndpoint } from '../visibility';
import { endpointResource } from '../webhook-resources';

/** The previous secret keeps signing beside the new one for 24 hours. */
export const rotateWebhookSecret = serve(adminApi.rotateWebhookSecret, async ({ params }, { principal, clients }) => {
  const endpoint = await visibleEndpoint(clients, principal, params.id);
  if (!endpoint.ok) return endpoint;
  const rotated = await clients.webhooks.rotateSecret({ endpointId: endpoint.value.id });
  if (!rotated.ok) return rotated;
  return json({ ...endpointResource(rotated.value.endpoint!), secret: rotated.value.secret });
});
