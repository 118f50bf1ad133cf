import { createKeyBody } from '../requests';
import { createdKey } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const createKey = defineRoute({
  ...endpoints.createKey,
  summary: 'Creates an API key; its value is in this answer only.',
  who: 'both',
  params: undefined,
  query: undefined,
  body: createKeyBody,
  status: 201,
  response: createdKey,
  errors: ['invalid_request_error', 'not_found_error', 'request_too_large'],
});
