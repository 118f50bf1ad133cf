/** The admin API's usage-per-key and webhook routes (docs/admin-api.md), over the session's client. */
import type { AdminClient, Environment } from './api';

export interface KeyUsageLine {
  key_id: string;
  name: string | null;
  display_prefix: string | null;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  billable_tokens: number;
  cost_gbp: number;
  cost_gbp_exact: string;
  refusals: Record<string, number>;
}

export interface KeyUsage {
  period: { start: string; end: string };
  environment: Environment;
  data: KeyUsageLine[];
}

export type KeyDayUsage = Omit<KeyUsage, 'data'> & { data: (KeyUsageLine & { day: string })[] };

export const webhookEventTypes = [
  'usage.threshold_crossed',
  'usage.ceiling_reached',
  'key.revoked',
  'key.rotated',
  'key.expiring',
] as const;

export interface WebhookEndpoint {
  id: string;
  account_id: string;
  url: string;
  event_types: string[];
  thresholds_percent: number[];
  expiring_within_days: number;
  created_at: string;
  previous_secret_until: string | null;
}

export type CreatedEndpoint = WebhookEndpoint & { secret: string };

export interface NewEndpoint {
  url: string;
  event_types: string[];
  thresholds_percent?: number[];
  expiring_within_days?: number;
}

export interface Delivery {
  id: string;
  endpoint_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  created_at: string;
  attempts: number;
  next_attempt_at: string | null;
  delivered_at: string | null;
  payload: unknown;
  attempt_log: { attempted_at: string; status_code: number | null; error: string | null; duration_ms: number }[];
}

const account = (id: string) => `/accounts/${encodeURIComponent(id)}`;
const endpoint = (id: string) => `/webhooks/${encodeURIComponent(id)}`;

export const usageApi = (client: AdminClient) => ({
  keyUsage: (id: string, environment: Environment) =>
    client.request<KeyUsage>('GET', `${account(id)}/usage/keys?environment=${environment}`),
  keyDailyUsage: (id: string, environment: Environment) =>
    client.request<KeyDayUsage>('GET', `${account(id)}/usage/keys/daily?environment=${environment}`),
  keyUsageCsv: (id: string, environment: Environment, daily: boolean) =>
    client.download(`${account(id)}/usage/keys${daily ? '/daily' : ''}?environment=${environment}&format=csv`),
  listEndpoints: (id: string) =>
    client.request<{ data: WebhookEndpoint[] }>('GET', `${account(id)}/webhooks`).then((list) => list.data),
  createEndpoint: (id: string, body: NewEndpoint) =>
    client.request<CreatedEndpoint>('POST', `${account(id)}/webhooks`, body),
  deleteEndpoint: (id: string) => client.request<WebhookEndpoint>('DELETE', endpoint(id)),
  rotateSecret: (id: string) => client.request<CreatedEndpoint>('POST', `${endpoint(id)}/rotate-secret`),
  deliveries: (id: string) =>
    client.request<{ data: Delivery[] }>('GET', `${endpoint(id)}/deliveries`).then((list) => list.data),
  resend: (id: string, messageId: string) =>
    client.request<Delivery>('POST', `${endpoint(id)}/deliveries/${encodeURIComponent(messageId)}/resend`),
});
