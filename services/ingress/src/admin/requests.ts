import { z } from 'zod';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';

/** Request bodies of the admin API, checked with messages that name the field. */

const nonEmpty = (field: string) =>
  z.string({ error: `expected a non-empty string` }).trim().min(1, `expected a non-empty string`).describe(field);
const positiveOrNull = z
  .number({ error: 'expected a positive integer or null' })
  .int('expected a positive integer or null')
  .positive('expected a positive integer or null')
  .nullable();

export const createAccountBody = z.strictObject({ name: nonEmpty('name'), plan: nonEmpty('plan') });

export const createAdminKeyBody = z.strictObject({ name: nonEmpty('name') });

export const setLimitsBody = z.strictObject({
  requests_per_minute: positiveOrNull.optional(),
  concurrency: positiveOrNull.optional(),
  monthly_tokens: positiveOrNull.optional(),
  hard_ceiling_tokens: positiveOrNull.optional(),
  overage: z.boolean({ error: 'expected true, false or null' }).nullable().optional(),
});

export const createKeyBody = z.strictObject({
  account_id: nonEmpty('account_id'),
  name: nonEmpty('name'),
  environment: z.enum(['live', 'test'], { error: 'expected "live" or "test"' }),
  residency: z.enum(['uk', 'eu'], { error: 'expected "uk" or "eu"' }),
  privacy_mode: z.enum(['off', 'flag', 'redact', 'tokenise'], {
    error: 'expected "off", "flag", "redact" or "tokenise"',
  }),
  allowed_models: z
    .array(z.string().min(1), { error: 'expected an array of model aliases or null' })
    .nullable()
    .optional(),
  allowed_ips: z
    .array(z.string().min(1), { error: 'expected an array of addresses or CIDR ranges, or null' })
    .nullable()
    .optional(),
  expires_at: z.iso.datetime({ offset: true, error: 'expected an ISO 8601 timestamp or null' }).nullable().optional(),
});

/** Parses a JSON body against a schema; a failure is a 400 naming the field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): Result<z.infer<S>> {
  const result = schema.safeParse(body ?? {});
  if (result.success) return ok(result.data);
  const issue = result.error.issues[0]!;
  const field = issue.path.join('.');
  const message =
    issue.code === 'unrecognized_keys'
      ? `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => `"${key}"`).join(', ')}.`
      : `${field}: ${issue.message}.`;
  return err(gatewayError('invalid_request_error', message));
}
