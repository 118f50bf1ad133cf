import { z } from 'zod';
import { webhookEndpoint } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const deleteWebhookEndpoint = defineRoute({
  ...endpoints.deleteWebhookEndpoint,
  summary: 'Deletes a webhook endpoint: nothing more is delivered to it.',
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: webhookEndpoint,
  errors: ['not_found_error'],
});
