import { z } from 'zod';
import { webhookEndpointList } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const listWebhookEndpoints = defineRoute({
  ...endpoints.listWebhookEndpoints,
  summary: `The account's webhook endpoints (deleted ones left out).`,
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: webhookEndpointList,
  errors: ['not_found_error'],
});
