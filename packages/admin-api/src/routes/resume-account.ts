import { z } from 'zod';
import { account } from '../resources';
import { defineRoute } from '../route';

export const resumeAccount = defineRoute({
  name: 'resumeAccount',
  method: 'POST',
  path: '/accounts/{id}/resume',
  summary: 'Resumes a suspended account.',
  who: 'operator',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: account,
  errors: ['not_found_error'],
});
