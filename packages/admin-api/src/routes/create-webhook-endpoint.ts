import { z } from 'zod';
import { createEndpointBody } from '../requests';
import { webhookEndpointWithSecret } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const createWebhookEndpoint = defineRoute({
  ...endpoints.createWebhookEndpoint,
  summary: 'Registers a webhook endpoint; its signing secret is in this answer only.',
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: createEndpointBody,
  status: 201,
  response: webhookEndpointWithSecret,
  errors: ['invalid_request_error', 'not_found_error', 'request_too_large'],
});
