import { keyListQuery } from '../requests';
import { keyPage } from '../resources';
import { defineRoute } from '../route';

export const listKeys = defineRoute({
  name: 'listKeys',
  method: 'GET',
  path: '/keys',
  summary: `One page of an account's keys, newest first, with filters.`,
  who: 'both',
  params: undefined,
  query: keyListQuery,
  body: undefined,
  status: 200,
  response: keyPage,
  errors: ['invalid_request_error', 'not_found_error'],
});
