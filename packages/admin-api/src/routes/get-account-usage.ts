import { z } from 'zod';
import { accountUsageQuery } from '../requests';
import { accountUsage } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const getAccountUsage = defineRoute({
  ...endpoints.getAccountUsage,
  summary: `The account's usage in the current billing period, per model and per day.`,
  who: 'both',
  params: z.object({ id: z.string() }),
  query: accountUsageQuery,
  body: undefined,
  status: 200,
  response: accountUsage,
  errors: ['invalid_request_error', 'not_found_error'],
});
