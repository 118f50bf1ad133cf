import { accountListQuery } from '../requests';
import { accountPage } from '../resources';
import { defineRoute } from '../route';

export const listAccounts = defineRoute({
  name: 'listAccounts',
  method: 'GET',
  path: '/accounts',
  summary: 'One page of accounts, newest first: every account for the operator, its own for an admin key.',
  who: 'both',
  params: undefined,
  query: accountListQuery,
  body: undefined,
  status: 200,
  response: accountPage,
  errors: ['invalid_request_error'],
});
