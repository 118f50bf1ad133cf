import { createAccount } from './create-account';
import { createAdminKey } from './create-admin-key';
import { createKey } from './create-key';
import { createWebhookEndpoint } from './create-webhook-endpoint';
import { deleteWebhookEndpoint } from './delete-webhook-endpoint';
import { getAccountLimits } from './get-account-limits';
import { getAccountUsage } from './get-account-usage';
import { getAccount } from './get-account';
import { getKeyDailyUsage } from './get-key-daily-usage';
import { getKeyUsage } from './get-key-usage';
import { getKey } from './get-key';
import { getWebhookEndpoint } from './get-webhook-endpoint';
import { listAccounts } from './list-accounts';
import { listAdminKeys } from './list-admin-keys';
import { listAudit } from './list-audit';
import { listDeliveries } from './list-deliveries';
import { listKeys } from './list-keys';
import { listWebhookEndpoints } from './list-webhook-endpoints';
import { resendDelivery } from './resend-delivery';
import { resumeAccount } from './resume-account';
import { revokeAdminKey } from './revoke-admin-key';
import { revokeKey } from './revoke-key';
import { rotateKey } from './rotate-key';
import { rotateWebhookSecret } from './rotate-webhook-secret';
import { setAccountLimits } from './set-account-limits';
import { suspendAccount } from './suspend-account';
import { updateKey } from './update-key';
import { verifyAudit } from './verify-audit';
import type { ServedRoute } from '../route-kit';

/** The handler of each declared route, one file each. */
export const servedRoutes: readonly ServedRoute[] = [
  createAccount,
  createAdminKey,
  createKey,
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  getAccountLimits,
  getAccountUsage,
  getAccount,
  getKeyDailyUsage,
  getKeyUsage,
  getKey,
  getWebhookEndpoint,
  listAccounts,
  listAdminKeys,
  listAudit,
  listDeliveries,
  listKeys,
  listWebhookEndpoints,
  resendDelivery,
  resumeAccount,
  revokeAdminKey,
  revokeKey,
  rotateKey,
  rotateWebhookSecret,
  setAccountLimits,
  suspendAccount,
  updateKey,
  verifyAudit,
];
