import { z } from 'zod';
import { keyEnvironments, privacyModes, residencyTiers } from '@gw/vocabulary';
import { webhookEventTypes } from './endpoints';

/**
 * The answers of the admin API (docs/admin-api.md) as strict schemas: every object names each of its
 * fields, so that an answer with a field more, less or of another type fails the route's check and the
 * OpenAPI document has no free-form object. The residency, privacy and environment names are the ones the
 * API has always used.
 */

const timestamp = z.iso.datetime({ offset: true });
const timestampOrNull = timestamp.nullable();
const count = z.number().int().nonnegative();

export const environment = z.enum(keyEnvironments);
export const residency = z.enum(residencyTiers);
export const privacyMode = z.enum(privacyModes);
export const keyStatus = z.enum(['active', 'revoked', 'expired']);

export const accountLimits = z.strictObject({
  requests_per_minute: z.number().int().positive().nullable(),
  concurrency: z.number().int().positive().nullable(),
  monthly_tokens: z.number().int().positive().nullable(),
  overage: z.boolean().nullable(),
  hard_ceiling_tokens: z.number().int().positive().nullable(),
});

export const account = z
  .strictObject({
    id: z.string(),
    name: z.string(),
    plan: z.string(),
    status: z.enum(['active', 'suspended']),
    suspended_at: timestampOrNull,
    created_at: timestampOrNull,
    limits: accountLimits,
  })
  .meta({ id: 'Account' });

const keyFields = {
  id: z.string(),
  account_id: z.string(),
  name: z.string(),
  environment,
  display_prefix: z.string(),
  residency,
  privacy_mode: privacyMode,
  allowed_models: z.array(z.string()).nullable(),
  allowed_ips: z.array(z.string()).nullable(),
  expires_at: timestampOrNull,
  status: keyStatus,
  created_at: timestampOrNull,
  last_used_at: timestampOrNull,
  revoked_at: timestampOrNull,
  replaces_key_id: z.string().nullable(),
};

/** A key as every answer but its creation's shows it: never the key value. */
export const apiKey = z.strictObject(keyFields).meta({ id: 'Key' });
export const createdKey = z.strictObject({ ...keyFields, key: z.string() }).meta({ id: 'CreatedKey' });
export const rotatedKey = z
  .strictObject({ ...keyFields, key: z.string(), replaces: z.string() })
  .meta({ id: 'RotatedKey' });

const adminKeyFields = {
  id: z.string(),
  account_id: z.string(),
  name: z.string(),
  display_prefix: z.string(),
  status: keyStatus,
  created_at: timestampOrNull,
  expires_at: timestampOrNull,
  last_used_at: timestampOrNull,
  revoked_at: timestampOrNull,
};

export const adminKey = z.strictObject(adminKeyFields).meta({ id: 'AdminKey' });
export const createdAdminKey = z.strictObject({ ...adminKeyFields, key: z.string() }).meta({ id: 'CreatedAdminKey' });

/** One page of a list, newest first; `next_after` is the `after` of the next page (null: the last). */
export const pageOf = <T extends z.ZodType>(item: T, id: string) =>
  z.strictObject({ data: z.array(item), next_after: z.string().nullable() }).meta({ id });

export const accountPage = pageOf(account, 'AccountPage');
export const keyPage = pageOf(apiKey, 'KeyPage');
export const adminKeyPage = pageOf(adminKey, 'AdminKeyPage');

const limitOf = <T extends z.ZodType>(value: T) => z.strictObject({ value, plan: value, override: value.nullable() });

export const limitsInForce = z
  .strictObject({
    account_id: z.string(),
    plan: z.string(),
    residency: z.array(residency),
    models: z.union([z.literal('all'), z.array(z.string())]),
    requests_per_minute: limitOf(z.number().int()),
    concurrency: limitOf(z.number().int()),
    monthly_tokens: limitOf(z.number().int()),
    overage: limitOf(z.boolean()),
    hard_ceiling_tokens: limitOf(z.number().int()),
  })
  .meta({ id: 'LimitsInForce' });

const period = z.strictObject({ start: timestamp, end: timestamp });
const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/);

export const accountUsage = z
  .strictObject({
    period,
    plan: z.string(),
    environment,
    tokens: z.strictObject({
      allowance: count,
      used: count,
      remaining: count,
      percent_used: z.number().nonnegative(),
      overage_allowed: z.boolean(),
      overage: count,
    }),
    by_model: z.array(
      z.strictObject({ model: z.string(), requests: count, billable_tokens: count, cost_gbp: z.number() }),
    ),
    daily: z.array(z.strictObject({ day, requests: count, billable_tokens: count })),
  })
  .meta({ id: 'AccountUsage' });

/** Refusals after a key verified, by error type and kind (`rate_limit_error.per_minute`): counts only. */
const refusals = z.record(z.string().regex(/^[a-z_]+(\.[a-z_]+)?$/), count);

const keyLineFields = {
  key_id: z.string(),
  name: z.string().nullable(),
  display_prefix: z.string().nullable(),
  requests: count,
  input_tokens: count,
  output_tokens: count,
  cache_read_input_tokens: count,
  cache_creation_input_tokens: count,
  billable_tokens: count,
  cost_gbp: z.number(),
  cost_gbp_exact: z.string().regex(/^\d+(\.\d+)?$/),
  refusals,
};

export const keyUsage = z
  .strictObject({ period, environment, data: z.array(z.strictObject(keyLineFields)) })
  .meta({ id: 'KeyUsage' });
export const keyDailyUsage = z
  .strictObject({ period, environment, data: z.array(z.strictObject({ day, ...keyLineFields })) })
  .meta({ id: 'KeyDailyUsage' });

/** What a change recorded: the resource before and after as this API showed it (a limits change: the limits). */
const auditResource = z.union([account, apiKey, adminKey, accountLimits]).nullable();

export const auditEntry = z
  .strictObject({
    seq: z.number().int().positive(),
    at: timestamp,
    actor: z.strictObject({ kind: z.enum(['operator', 'admin_key', 'unknown']), id: z.string().nullable() }),
    account_id: z.string().nullable(),
    source_address: z.string(),
    action: z.string(),
    target: z.strictObject({ kind: z.string(), id: z.string() }).nullable(),
    before: auditResource,
    after: auditResource,
    prev_hash: z.string().regex(/^[0-9a-f]{64}$/),
    hash: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .meta({ id: 'AuditEntry' });

export const auditPage = z
  .strictObject({ data: z.array(auditEntry), next_before: z.number().int().positive().nullable() })
  .meta({ id: 'AuditPage' });

const chainHead = z.strictObject({ seq: count, hash: z.string().regex(/^([0-9a-f]{64})?$/) });

export const auditVerification = z
  .strictObject({
    valid: z.boolean(),
    entries_checked: count,
    head: chainHead,
    published_head: chainHead.nullable(),
    failure: z.strictObject({ seq: count, reason: z.string() }).nullable(),
  })
  .meta({ id: 'AuditVerification' });

export const webhookEventType = z.enum(webhookEventTypes);

const endpointFields = {
  id: z.string(),
  account_id: z.string(),
  url: z.string(),
  event_types: z.array(webhookEventType),
  thresholds_percent: z.array(z.number().int().positive()),
  expiring_within_days: z.number().int().positive(),
  created_at: timestampOrNull,
  previous_secret_until: timestampOrNull,
};

export const webhookEndpoint = z.strictObject(endpointFields).meta({ id: 'WebhookEndpoint' });
export const webhookEndpointWithSecret = z
  .strictObject({ ...endpointFields, secret: z.string() })
  .meta({ id: 'WebhookEndpointWithSecret' });
export const webhookEndpointList = z
  .strictObject({ data: z.array(webhookEndpoint) })
  .meta({ id: 'WebhookEndpointList' });

const usageEventData = {
  account_id: z.string(),
  environment,
  period_start: z.string(),
  allowance_tokens: count,
  used_tokens: count,
};

/** The body each event's receivers get: ids and counts only. */
const eventPayload = <T extends z.ZodType>(type: string, data: T) =>
  z.strictObject({ type: z.literal(type), timestamp, data });

export const webhookPayload = z
  .union([
    eventPayload(
      'usage.threshold_crossed',
      z.strictObject({ ...usageEventData, threshold_percent: z.number().int().positive() }),
    ),
    eventPayload('usage.ceiling_reached', z.strictObject({ ...usageEventData, hard_ceiling_tokens: count })),
    eventPayload(
      'key.revoked',
      z.strictObject({ account_id: z.string(), key_id: z.string(), revoked_at: timestampOrNull }),
    ),
    eventPayload('key.rotated', z.strictObject({ account_id: z.string(), key_id: z.string(), new_key_id: z.string() })),
    eventPayload('key.expiring', z.strictObject({ account_id: z.string(), key_id: z.string(), expires_at: timestamp })),
  ])
  .meta({ id: 'WebhookPayload' });

export const delivery = z
  .strictObject({
    id: z.string(),
    endpoint_id: z.string(),
    event_type: webhookEventType,
    status: z.enum(['pending', 'delivered', 'failed']),
    created_at: timestampOrNull,
    attempts: count,
    next_attempt_at: timestampOrNull,
    delivered_at: timestampOrNull,
    payload: webhookPayload.nullable(),
    attempt_log: z.array(
      z.strictObject({
        attempted_at: timestampOrNull,
        status_code: z.number().int().nullable(),
        error: z.string().nullable(),
        duration_ms: count,
      }),
    ),
  })
  .meta({ id: 'Delivery' });

export const deliveryList = z.strictObject({ data: z.array(delivery) }).meta({ id: 'DeliveryList' });

/** The error envelope every refusal carries. */
export const errorEnvelope = z
  .strictObject({
    type: z.literal('error'),
    error: z.strictObject({ type: z.string(), message: z.string() }),
    request_id: z.string().optional(),
  })
  .meta({ id: 'Error' });

export type Environment = z.output<typeof environment>;
export type Residency = z.output<typeof residency>;
export type PrivacyMode = z.output<typeof privacyMode>;
export type KeyStatus = z.output<typeof keyStatus>;
export type AccountLimits = z.output<typeof accountLimits>;
export type Account = z.output<typeof account>;
export type ApiKey = z.output<typeof apiKey>;
export type CreatedKey = z.output<typeof createdKey>;
export type RotatedKey = z.output<typeof rotatedKey>;
export type AdminKey = z.output<typeof adminKey>;
export type CreatedAdminKey = z.output<typeof createdAdminKey>;
export type LimitsInForce = z.output<typeof limitsInForce>;
export type AccountUsage = z.output<typeof accountUsage>;
export type KeyUsage = z.output<typeof keyUsage>;
export type KeyDailyUsage = z.output<typeof keyDailyUsage>;
export type KeyUsageLine = KeyUsage['data'][number];
export type AuditEntry = z.output<typeof auditEntry>;
export type AuditVerification = z.output<typeof auditVerification>;
export type WebhookEventType = z.output<typeof webhookEventType>;
export type WebhookEndpoint = z.output<typeof webhookEndpoint>;
export type WebhookEndpointWithSecret = z.output<typeof webhookEndpointWithSecret>;
export type Delivery = z.output<typeof delivery>;
