import { accountListQuery } from '../requests';
import { accountPage } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const listAccounts = defineRoute({
  ...endpoints.listAccounts,
  summary: 'One page of accounts, newest first: every account for the operator, its own for an admin key.',
  who: 'both',
  params: undefined,
  query: accountListQuery,
  body: undefined,
  status: 200,
  response: accountPage,
  errors: ['invalid_request_error'],
});
