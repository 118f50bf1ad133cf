import { z } from 'zod';
import { adminKeyListQuery } from '../requests';
import { adminKeyPage } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const listAdminKeys = defineRoute({
  ...endpoints.listAdminKeys,
  summary: `One page of the account's admin keys, newest first.`,
  who: 'both',
  params: z.object({ id: z.string() }),
  query: adminKeyListQuery,
  body: undefined,
  status: 200,
  response: adminKeyPage,
  errors: ['invalid_request_error', 'not_found_error'],
});
