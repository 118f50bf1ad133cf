import { z } from 'zod';
import { account } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const getAccount = defineRoute({
  ...endpoints.getAccount,
  summary: 'An account.',
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: account,
  errors: ['not_found_error'],
});
