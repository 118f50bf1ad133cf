import { z } from 'zod';
import { usageQuery } from '../requests';
import { keyDailyUsage } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const getKeyDailyUsage = defineRoute({
  ...endpoints.getKeyDailyUsage,
  summary: `The month's usage and refusals per key and UTC day, as JSON or a CSV file.`,
  who: 'both',
  params: z.object({ id: z.string() }),
  query: usageQuery,
  body: undefined,
  status: 200,
  response: keyDailyUsage,
  csv: true,
  errors: ['invalid_request_error', 'not_found_error'],
});
