import { adminApi } from '@gw/admin-api';
import { json, serve } from '../route-kit';
import { visibleEndpoint } from '../visibility';
import { deliveryResource } from '../webhook-resources';

/** Sent again now with the same webhook-id, and retried for another 24 hours if it fails. */
export const resendDelivery = serve(adminApi.resendDelivery, async ({ params }, { principal, clients }) => {
  const endpoint = await visibleEndpoint(clients, principal, params.id);
  if (!endpoint.ok) return endpoint;
  const resent = await clients.webhooks.resend({ endpointId: endpoint.value.id, messageId: params.message_id });
  return resent.ok ? json(deliveryResource(resent.value.delivery!)) : resent;
});
