import { z } from 'zod';
import { createAdminKeyBody } from '../requests';
import { createdAdminKey } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const createAdminKey = defineRoute({
  ...endpoints.createAdminKey,
  summary: 'Creates an admin key for the account; its value is in this answer only.',
  who: 'operator',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: createAdminKeyBody,
  status: 201,
  response: createdAdminKey,
  errors: ['invalid_request_error', 'not_found_error', 'request_too_large'],
});
