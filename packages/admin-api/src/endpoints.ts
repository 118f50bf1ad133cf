/**
 * Each route's method and path under /admin/v1, by the name the client calls it by: the part of a route's
 * declaration (routes/) that the typed client needs, kept apart from the schemas so that a page bundling
 * the client does not bundle zod.
 */
export const endpoints = {
  createAccount: { name: 'createAccount', method: 'POST', path: '/accounts' },
  listAccounts: { name: 'listAccounts', method: 'GET', path: '/accounts' },
  getAccount: { name: 'getAccount', method: 'GET', path: '/accounts/{id}' },
  suspendAccount: { name: 'suspendAccount', method: 'POST', path: '/accounts/{id}/suspend' },
  resumeAccount: { name: 'resumeAccount', method: 'POST', path: '/accounts/{id}/resume' },
  setAccountLimits: { name: 'setAccountLimits', method: 'PATCH', path: '/accounts/{id}/limits' },
  getAccountLimits: { name: 'getAccountLimits', method: 'GET', path: '/accounts/{id}/limits' },
  getAccountUsage: { name: 'getAccountUsage', method: 'GET', path: '/accounts/{id}/usage' },
  createAdminKey: { name: 'createAdminKey', method: 'POST', path: '/accounts/{id}/admin-keys' },
  listAdminKeys: { name: 'listAdminKeys', method: 'GET', path: '/accounts/{id}/admin-keys' },
  revokeAdminKey: { name: 'revokeAdminKey', method: 'POST', path: '/admin-keys/{id}/revoke' },
  createKey: { name: 'createKey', method: 'POST', path: '/keys' },
  listKeys: { name: 'listKeys', method: 'GET', path: '/keys' },
  getKey: { name: 'getKey', method: 'GET', path: '/keys/{id}' },
  updateKey: { name: 'updateKey', method: 'PATCH', path: '/keys/{id}' },
  revokeKey: { name: 'revokeKey', method: 'POST', path: '/keys/{id}/revoke' },
  rotateKey: { name: 'rotateKey', method: 'POST', path: '/keys/{id}/rotate' },
  listAudit: { name: 'listAudit', method: 'GET', path: '/audit' },
  verifyAudit: { name: 'verifyAudit', method: 'GET', path: '/audit/verify' },
  getKeyUsage: { name: 'getKeyUsage', method: 'GET', path: '/accounts/{id}/usage/keys' },
  getKeyDailyUsage: { name: 'getKeyDailyUsage', method: 'GET', path: '/accounts/{id}/usage/keys/daily' },
  createWebhookEndpoint: { name: 'createWebhookEndpoint', method: 'POST', path: '/accounts/{id}/webhooks' },
  listWebhookEndpoints: { name: 'listWebhookEndpoints', method: 'GET', path: '/accounts/{id}/webhooks' },
  getWebhookEndpoint: { name: 'getWebhookEndpoint', method: 'GET', path: '/webhooks/{id}' },
  deleteWebhookEndpoint: { name: 'deleteWebhookEndpoint', method: 'DELETE', path: '/webhooks/{id}' },
  rotateWebhookSecret: { name: 'rotateWebhookSecret', method: 'POST', path: '/webhooks/{id}/rotate-secret' },
  listDeliveries: { name: 'listDeliveries', method: 'GET', path: '/webhooks/{id}/deliveries' },
  resendDelivery: { name: 'resendDelivery', method: 'POST', path: '/webhooks/{id}/deliveries/{message_id}/resend' },
} as const;

export type Endpoint = (typeof endpoints)[keyof typeof endpoints];

/** The events a webhook endpoint may subscribe to. */
export const webhookEventTypes = [
  'usage.threshold_crossed',
  'usage.ceiling_reached',
  'key.revoked',
  'key.rotated',
  'key.expiring',
] as const;
