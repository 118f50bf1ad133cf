import { adminApi } from '@gw/admin-api';
import { json, serve } from '../route-kit';
import { visibleEndpoint } from '../visibility';
import { deliveryResource } from '../webhook-resources';

/** `limit` is forgiving: anything but a whole number from 1 is the default 50, more than 200 is 200. */
const deliveryLimit = (limit: string | undefined) => {
  const value = Number(limit ?? 50);
  return Number.isInteger(value) && value > 0 ? Math.min(value, 200) : 50;
};

export const listDeliveries = serve(adminApi.listDeliveries, async ({ params, query }, { principal, clients }) => {
  const endpoint = await visibleEndpoint(clients, principal, params.id);
  if (!endpoint.ok) return endpoint;
  const listed = await clients.webhooks.listDeliveries({
    endpointId: endpoint.value.id,
    limit: deliveryLimit(query.limit),
  });
  return listed.ok ? json({ data: listed.value.deliveries.map(deliveryResource) }) : listed;
});
