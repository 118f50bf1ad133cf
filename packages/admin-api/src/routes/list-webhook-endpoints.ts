import { z } from 'zod';
import { webhookEndpointList } from '../resources';
import { defineRoute } from '../route';

export const listWebhookEndpoints = defineRoute({
  name: 'listWebhookEndpoints',
  method: 'GET',
  path: '/accounts/{id}/webhooks',
  summary: `The account's webhook endpoints (deleted ones left out).`,
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: webhookEndpointList,
  errors: ['not_found_error'],
});
