/** The admin API's usage-per-key and webhook routes (docs/admin-api.md), over the session's client. */
import { webhookEventTypes } from '@gw/admin-api/dist/endpoints';
import type { KeyDailyUsage, NewEndpoint } from '@gw/admin-api';
import type { AdminClient, Environment } from './api';
import { value } from './api';

export type {
  Delivery,
  KeyUsage,
  KeyUsageLine,
  NewEndpoint,
  WebhookEndpoint,
  WebhookEndpointWithSecret as CreatedEndpoint,
} from '@gw/admin-api';
export type KeyDayUsage = KeyDailyUsage;

export { webhookEventTypes };

export const usageApi = (client: AdminClient) => {
  const { api } = client;
  return {
    keyUsage: async (id: string, environment: Environment) =>
      value(await api.call('getKeyUsage', { params: { id }, query: { environment } })),
    keyDailyUsage: async (id: string, environment: Environment) =>
      value(await api.call('getKeyDailyUsage', { params: { id }, query: { environment } })),
    keyUsageCsv: async (id: string, environment: Environment, daily: boolean) =>
      value(await api.download(daily ? 'getKeyDailyUsage' : 'getKeyUsage', { params: { id }, query: { environment } })),
    listEndpoints: async (id: string) => value(await api.call('listWebhookEndpoints', { params: { id } })).data,
    createEndpoint: async (id: string, body: NewEndpoint) =>
      value(await api.call('createWebhookEndpoint', { params: { id }, body })),
    deleteEndpoint: async (id: string) => value(await api.call('deleteWebhookEndpoint', { params: { id } })),
    rotateSecret: async (id: string) => value(await api.call('rotateWebhookSecret', { params: { id } })),
    deliveries: async (id: string) => value(await api.call('listDeliveries', { params: { id } })).data,
    resend: async (id: string, messageId: string) =>
      value(await api.call('resendDelivery', { params: { id, message_id: messageId } })),
  };
};
