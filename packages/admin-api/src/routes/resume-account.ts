import { z } from 'zod';
import { account } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const resumeAccount = defineRoute({
  ...endpoints.resumeAccount,
  summary: 'Resumes a suspended account.',
  who: 'operator',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: account,
  errors: ['not_found_error'],
});
