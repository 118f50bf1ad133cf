import { auditQuery } from '../requests';
import { auditPage } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const listAudit = defineRoute({
  ...endpoints.listAudit,
  summary: `One page of the audit log, newest first: all of it for the operator, its account's for an admin key.`,
  who: 'both',
  params: undefined,
  query: auditQuery,
  body: undefined,
  status: 200,
  response: auditPage,
  errors: ['invalid_request_error', 'not_found_error'],
});
