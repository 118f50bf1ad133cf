import { z } from 'zod';
import { limitsInForce } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const getAccountLimits = defineRoute({
  ...endpoints.getAccountLimits,
  summary: `The limits in force: the plan's values with the account's overrides.`,
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: limitsInForce,
  errors: ['not_found_error'],
});
