import { z } from 'zod';
import { delivery } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const resendDelivery = defineRoute({
  ...endpoints.resendDelivery,
  summary: 'Sends a delivery again now, with the same webhook-id.',
  who: 'both',
  params: z.object({ id: z.string(), message_id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: delivery,
  errors: ['invalid_request_error', 'not_found_error'],
});
