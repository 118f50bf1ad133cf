import { z } from 'zod';
import { webhookEndpoint } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const getWebhookEndpoint = defineRoute({
  ...endpoints.getWebhookEndpoint,
  summary: 'A webhook endpoint (never its secret).',
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: webhookEndpoint,
  errors: ['not_found_error'],
});
