import { z } from 'zod';
import { webhookEndpoint } from '../resources';
import { defineRoute } from '../route';

export const deleteWebhookEndpoint = defineRoute({
  name: 'deleteWebhookEndpoint',
  method: 'DELETE',
  path: '/webhooks/{id}',
  summary: 'Deletes a webhook endpoint: nothing more is delivered to it.',
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: webhookEndpoint,
  errors: ['not_found_error'],
});
