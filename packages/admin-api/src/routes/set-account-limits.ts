import { z } from 'zod';
import { setLimitsBody } from '../requests';
import { account } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const setAccountLimits = defineRoute({
  ...endpoints.setAccountLimits,
  summary: `Sets or clears (null) the account's overrides of its plan's limits.`,
  who: 'operator',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: setLimitsBody,
  status: 200,
  response: account,
  errors: ['invalid_request_error', 'not_found_error', 'request_too_large'],
});
