import { expectedOneOf, KeyEnvironment, keyEnvironments, privacyModes, residencyTiers } from '@gw/vocabulary';
import { z } from 'zod';
import { findInvalidEntry, maxAllowListEntries } from '@gw/addresses';
// The one module of @gw/errors without gRPC: this package is bundled into the dashboard too.
import { quoted } from '@gw/errors/dist/quoted';
/**
 * Request bodies of the admin API, checked with messages that name the field. The auth service applies
 * the same limits and words its refusals the same way; these answer before a call is made. Lengths
 * count characters (code points).
 */
const maxNameChars = 200;
const maxModelIdChars = 256;
const maxAllowedModels = 1000;

/** Whether text has more than `max` code points; text of at most `max` UTF-16 units cannot. */
const longerThan = (text: string, max: number) => text.length > max && [...text].length > max;

const nonEmpty = (field: string) =>
  z.string({ error: `expected a non-empty string` }).trim().min(1, `expected a non-empty string`).describe(field);
/**
 * An account or key name: shown in every listing, so short and printable. Bidirectional and invisible
 * characters are refused by auth, which words the refusal the same way.
 */
const name = nonEmpty('name')
  .refine((value) => !longerThan(value, maxNameChars), `expected at most ${maxNameChars} characters`)
  .refine((value) => !/\p{Cc}/u.test(value), 'must not contain control characters');

const modelId = z
  .string({ error: 'expected a model alias' })
  .refine(
    (value) => value.length > 0 && !longerThan(value, maxModelIdChars),
    `expected a model id of 1 to ${maxModelIdChars} characters`,
  );

/** Canonical addresses and ranges only (docs/decisions.md): the first other entry is named with its index. */
const allowList = z
  .array(z.string({ error: 'expected an address or CIDR range' }), {
    error: 'expected an array of addresses or CIDR ranges, or null',
  })
  .max(maxAllowListEntries, `expected at most ${maxAllowListEntries} entries`)
  .superRefine((entries, context) => {
    const found = findInvalidEntry(entries);
    if (found) {
      context.addIssue({
        code: 'custom',
        path: [found.index],
        message: `${quoted(entries[found.index]!)} ${found.reason}`,
      });
    }
  });

const allowedModels = z
  .array(modelId, { error: 'expected an array of model aliases or null' })
  .max(maxAllowedModels, `expected at most ${maxAllowedModels} models`);

const positiveOrNull = z
  .number({ error: 'expected a positive integer or null' })
  .int('expected a positive integer or null')
  .positive('expected a positive integer or null')
  .nullable();

export const createAccountBody = z.strictObject({ name, plan: nonEmpty('plan') });

/** A future instant, or null for none. */
const expiry = z.iso
  .datetime({ offset: true, error: 'expected an ISO 8601 timestamp or null' })
  .refine((value) => Date.parse(value) > Date.now(), 'expected a time in the future')
  .nullable()
  .optional();

export const createAdminKeyBody = z.strictObject({ name, expires_at: expiry });

export const setLimitsBody = z.strictObject({
  requests_per_minute: positiveOrNull.optional(),
  concurrency: positiveOrNull.optional(),
  monthly_tokens: positiveOrNull.optional(),
  hard_ceiling_tokens: positiveOrNull.optional(),
  overage: z.boolean({ error: 'expected true, false or null' }).nullable().optional(),
});

export const createKeyBody = z.strictObject({
  account_id: nonEmpty('account_id'),
  name,
  environment: z.enum(keyEnvironments, { error: `expected ${expectedOneOf(keyEnvironments)}` }),
  residency: z.enum(residencyTiers, { error: `expected ${expectedOneOf(residencyTiers)}` }),
  privacy_mode: z.enum(privacyModes, { error: `expected ${expectedOneOf(privacyModes)}` }),
  allowed_models: allowedModels.nullable().optional(),
  allowed_ips: allowList.nullable().optional(),
  expires_at: expiry,
});

/** A key's editable fields: at least one; a list or expiry set to null is cleared. */
export const updateKeyBody = z
  .strictObject({
    name: name.optional(),
    allowed_models: allowedModels.nullable().optional(),
    allowed_ips: allowList.nullable().optional(),
    expires_at: expiry,
  })
  .refine((body) => Object.keys(body).length > 0, {
    message: 'expected at least one of name, allowed_models, allowed_ips, expires_at',
    path: ['body'],
  });

export const createEndpointBody = z.strictObject({
  url: z.string({ error: 'expected an https:// URL' }).min(1, 'expected an https:// URL'),
  event_types: z.array(z.string({ error: 'expected event type names' }), { error: 'expected an array of event types' }),
  thresholds_percent: z
    .array(z.number({ error: 'expected whole percentages' }).int('expected whole percentages'), {
      error: 'expected an array of whole percentages',
    })
    .optional(),
  expiring_within_days: z.number({ error: 'expected 1 to 90' }).int('expected 1 to 90').optional(),
});

/** Query parameters: each takes one value (a repeated one is refused), as text. */
const one = (field: string, missing = 'expected one value') =>
  z.string({ error: (issue) => (issue.input === undefined ? missing : 'expected one value') }).describe(field);

export const maxListLimit = 200;
const maxQueryChars = 100;

const limit = (fallback: string) =>
  one('limit')
    .default(fallback)
    .refine(
      (value) => /^\d{1,3}$/.test(value) && Number(value) >= 1 && Number(value) <= maxListLimit,
      `expected a whole number from 1 to ${maxListLimit}`,
    )
    .transform(Number);

const environmentFilter = z.enum(keyEnvironments, { error: `expected ${expectedOneOf(keyEnvironments)}` });

/** A list's page and filters: `limit` (1–200, 50 by default), `after` (a page's cursor), `q`, `status`, `environment`. */
export const listQuery = <S extends readonly [string, ...string[]] | readonly []>(statuses: S) =>
  z.object({
    limit: limit('50'),
    after: one('after').max(64, 'expected the next_after of a previous page').default(''),
    q: one('q')
      .refine((value) => [...value].length <= maxQueryChars, `expected at most ${maxQueryChars} characters`)
      .default(''),
    status: one('status')
      .refine(
        (value) => value === '' || (statuses as readonly string[]).includes(value),
        // The refusal repeats the value, cut like any echoed caller text.
        { error: (issue) => `${quoted(String(issue.input))} is not one of ${statuses.join(', ')}` },
      )
      .default(''),
    environment: z.enum(['', ...keyEnvironments], { error: `expected ${expectedOneOf(keyEnvironments)}` }).default(''),
  });

export const accountListQuery = listQuery(['active', 'suspended']);
export const adminKeyListQuery = listQuery([]);
export const keyListQuery = listQuery(['active', 'revoked', 'expired']).extend({
  account_id: one('account_id', 'expected the account id as a query parameter').min(
    1,
    'expected the account id as a query parameter',
  ),
});

export const auditQuery = z.object({
  account_id: one('account_id').optional(),
  limit: limit('50'),
  before: one('before')
    .regex(/^\d{1,15}$/, 'expected the next_before of a previous page')
    .default('0'),
  action: one('action')
    .regex(/^[a-z_.]{0,64}$/, 'expected an action or its start, e.g. key.')
    .default(''),
});

/** `period=YYYY-MM` (default: the current month), `environment` (live by default), `format` (json or csv). */
export const usageQuery = z.object({
  environment: environmentFilter.default(KeyEnvironment.live),
  period: one('period')
    .regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'expected a month as YYYY-MM')
    .optional(),
  format: z.enum(['json', 'csv'], { error: 'expected "json" or "csv"' }).default('json'),
});

export const accountUsageQuery = z.object({ environment: environmentFilter.default(KeyEnvironment.live) });

/** `limit` (1–200, 50 by default): forgiving, as the delivery log always was; the route reads it. */
export const deliveriesQuery = z.object({ limit: one('limit').optional() });

export type NewAccount = z.input<typeof createAccountBody>;
export type NewKey = z.input<typeof createKeyBody>;
export type KeyChanges = z.input<typeof updateKeyBody>;
export type LimitsChange = z.input<typeof setLimitsBody>;
export type NewAdminKey = z.input<typeof createAdminKeyBody>;
export type NewEndpoint = z.input<typeof createEndpointBody>;
