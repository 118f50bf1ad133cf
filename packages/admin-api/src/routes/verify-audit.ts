import { auditVerification } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const verifyAudit = defineRoute({
  ...endpoints.verifyAudit,
  summary: `Walks the audit log's hash chain and compares its end with the published head.`,
  who: 'operator',
  params: undefined,
  query: undefined,
  body: undefined,
  status: 200,
  response: auditVerification,
  errors: [],
});
