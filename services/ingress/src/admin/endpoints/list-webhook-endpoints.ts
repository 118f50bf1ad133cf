import { adminApi } from '@gw/admin-api';
import { requireAccount } from '../principal';
import { json, serve } from '../route-kit';
import { endpointResource } from '../webhook-resources';

export const listWebhookEndpoints = serve(adminApi.listWebhookEndpoints, async ({ params }, { principal, clients }) => {
  const allowed = requireAccount(principal, params.id);
  if (!allowed.ok) return allowed;
  // An unknown account is 404 rather than an empty list.
  const account = await clients.auth.getAccount({ id: params.id });
  if (!account.ok) return account;
  const listed = await clients.webhooks.listEndpoints({ accountId: params.id });
  return listed.ok ? json({ data: listed.value.endpoints.map(endpointResource) }) : listed;
});
