import { z } from 'zod';
import { createAdminKeyBody } from '../requests';
import { createdAdminKey } from '../resources';
import { defineRoute } from '../route';

export const createAdminKey = defineRoute({
  name: 'createAdminKey',
  method: 'POST',
  path: '/accounts/{id}/admin-keys',
  summary: 'Creates an admin key for the account; its value is in this answer only.',
  who: 'operator',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: createAdminKeyBody,
  status: 201,
  response: createdAdminKey,
  errors: ['invalid_request_error', 'not_found_error', 'request_too_large'],
});
