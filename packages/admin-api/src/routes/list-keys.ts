import { keyListQuery } from '../requests';
import { keyPage } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const listKeys = defineRoute({
  ...endpoints.listKeys,
  summary: `One page of an account's keys, newest first, with filters.`,
  who: 'both',
  params: undefined,
  query: keyListQuery,
  body: undefined,
  status: 200,
  response: keyPage,
  errors: ['invalid_request_error', 'not_found_error'],
});
