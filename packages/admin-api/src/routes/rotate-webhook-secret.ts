import { z } from 'zod';
import { webhookEndpointWithSecret } from '../resources';
import { defineRoute } from '../route';

export const rotateWebhookSecret = defineRoute({
  name: 'rotateWebhookSecret',
  method: 'POST',
  path: '/webhooks/{id}/rotate-secret',
  summary: 'A new signing secret; the previous one keeps signing beside it for 24 hours.',
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: webhookEndpointWithSecret,
  errors: ['not_found_error'],
});
