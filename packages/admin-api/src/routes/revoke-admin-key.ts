import { z } from 'zod';
import { adminKey } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const revokeAdminKey = defineRoute({
  ...endpoints.revokeAdminKey,
  summary: 'Revokes an admin key: refused from its next request. Revoking a revoked key changes nothing.',
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 200,
  response: adminKey,
  errors: ['not_found_error'],
});
