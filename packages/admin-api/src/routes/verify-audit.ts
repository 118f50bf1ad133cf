import { auditVerification } from '../resources';
import { defineRoute } from '../route';

export const verifyAudit = defineRoute({
  name: 'verifyAudit',
  method: 'GET',
  path: '/audit/verify',
  summary: `Walks the audit log's hash chain and compares its end with the published head.`,
  who: 'operator',
  params: undefined,
  query: undefined,
  body: undefined,
  status: 200,
  response: auditVerification,
  errors: [],
});
