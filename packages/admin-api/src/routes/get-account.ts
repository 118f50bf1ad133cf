import { z } from 'zod';
import { account } from '../resources';
import { defineRoute } from '../route';

export const getAccount = defineRoute({
  name: 'getAccount',
  method: 'GET',
  path: '/accounts/{id}',
  summary: 'An account.',
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: account,
  errors: ['not_found_error'],
});
