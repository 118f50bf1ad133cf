import { z } from 'zod';
import { account } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const suspendAccount = defineRoute({
  ...endpoints.suspendAccount,
  summary: 'Suspends an account: its keys are refused at once; suspending a suspended account changes nothing.',
  who: 'operator',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: account,
  errors: ['not_found_error'],
});
