import { createAccount } from './routes/create-account';
import { listAccounts } from './routes/list-accounts';
import { getAccount } from './routes/get-account';
import { suspendAccount } from './routes/suspend-account';
import { resumeAccount } from './routes/resume-account';
import { setAccountLimits } from './routes/set-account-limits';
import { getAccountLimits } from './routes/get-account-limits';
import { getAccountUsage } from './routes/get-account-usage';
import { createAdminKey } from './routes/create-admin-key';
import { listAdminKeys } from './routes/list-admin-keys';
import { revokeAdminKey } from './routes/revoke-admin-key';
import { createKey } from './routes/create-key';
import { listKeys } from './routes/list-keys';
import { getKey } from './routes/get-key';
import { updateKey } from './routes/update-key';
import { revokeKey } from './routes/revoke-key';
import { rotateKey } from './routes/rotate-key';
import { listAudit } from './routes/list-audit';
import { verifyAudit } from './routes/verify-audit';
import { getKeyUsage } from './routes/get-key-usage';
import { getKeyDailyUsage } from './routes/get-key-daily-usage';
import { createWebhookEndpoint } from './routes/create-webhook-endpoint';
import { listWebhookEndpoints } from './routes/list-webhook-endpoints';
import { getWebhookEndpoint } from './routes/get-webhook-endpoint';
import { deleteWebhookEndpoint } from './routes/delete-webhook-endpoint';
import { rotateWebhookSecret } from './routes/rotate-webhook-secret';
import { listDeliveries } from './routes/list-deliveries';
import { resendDelivery } from './routes/resend-delivery';

/** Every route of the admin API, in the order of docs/admin-api.md. */
export const adminApi = {
  createAccount,
  listAccounts,
  getAccount,
  suspendAccount,
  resumeAccount,
  setAccountLimits,
  getAccountLimits,
  getAccountUsage,
  createAdminKey,
  listAdminKeys,
  revokeAdminKey,
  createKey,
  listKeys,
  getKey,
  updateKey,
  revokeKey,
  rotateKey,
  listAudit,
  verifyAudit,
  getKeyUsage,
  getKeyDailyUsage,
  createWebhookEndpoint,
  listWebhookEndpoints,
  getWebhookEndpoint,
  deleteWebhookEndpoint,
  rotateWebhookSecret,
  listDeliveries,
  resendDelivery,
} as const;

export type AdminApi = typeof adminApi;
export type AdminRouteName = keyof AdminApi;
