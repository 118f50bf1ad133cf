import { z } from 'zod';
import { apiKey } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const revokeKey = defineRoute({
  ...endpoints.revokeKey,
  summary: 'Revokes a key at once. Revoking a revoked key changes nothing.',
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: apiKey,
  errors: ['not_found_error'],
});
