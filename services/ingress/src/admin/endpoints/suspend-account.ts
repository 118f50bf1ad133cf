import { adminApi } from '@gw/admin-api';
import { serve } from '../route-kit';
import { setSuspended } from './account-suspension';

/** Its keys are refused at once; suspending a suspended account changes nothing. */
export const suspendAccount = serve(adminApi.suspendAccount, ({ params }, context) =>
  setSuspended(params.id, context, true),
);
