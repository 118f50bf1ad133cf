import { z } from 'zod';
import { usageQuery } from '../requests';
import { keyUsage } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const getKeyUsage = defineRoute({
  ...endpoints.getKeyUsage,
  summary: `The month's usage and refusals per key, as JSON or a CSV file.`,
  who: 'both',
  params: z.object({ id: z.string() }),
  query: usageQuery,
  body: undefined,
  status: 200,
  response: keyUsage,
  csv: true,
  errors: ['invalid_request_error', 'not_found_error'],
});
