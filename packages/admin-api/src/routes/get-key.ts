import { z } from 'zod';
import { apiKey } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const getKey = defineRoute({
  ...endpoints.getKey,
  summary: 'A key (never its value).',
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: apiKey,
  errors: ['not_found_error'],
});
