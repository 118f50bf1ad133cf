import { adminApi } from '@gw/admin-api';
import { serve } from '../route-kit';
import { setSuspended } from './account-suspension';

export const resumeAccount = serve(adminApi.resumeAccount, ({ params }, context) =>
  setSuspended(params.id, context, false),
);
