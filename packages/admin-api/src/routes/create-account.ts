import { createAccountBody } from '../requests';
import { account } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const createAccount = defineRoute({
  ...endpoints.createAccount,
  summary: 'Creates an account on a plan.',
  who: 'operator',
  params: undefined,
  query: undefined,
  body: createAccountBody,
  status: 201,
  response: account,
  errors: ['invalid_request_error', 'request_too_large'],
});
