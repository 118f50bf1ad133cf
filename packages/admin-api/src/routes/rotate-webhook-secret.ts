import { z } from 'zod';
import { webhookEndpointWithSecret } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const rotateWebhookSecret = defineRoute({
  ...endpoints.rotateWebhookSecret,
  summary: 'A new signing secret; the previous one keeps signing beside it for 24 hours.',
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: webhookEndpointWithSecret,
  errors: ['not_found_error'],
});
