import { z } from 'zod';
import { updateKeyBody } from '../requests';
import { apiKey } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const updateKey = defineRoute({
  ...endpoints.updateKey,
  summary: `Changes a key's name and restrictions from its next request; a list or expiry set to null is cleared.`,
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: updateKeyBody,
  status: 200,
  response: apiKey,
  errors: ['invalid_request_error', 'not_found_error', 'request_too_large'],
});
