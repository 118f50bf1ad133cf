import { z } from 'zod';
import { findInvalidEntry, maxAllowListEntries } from '@gw/addresses';
import { err, gatewayError, ok, quoted } from '@gw/errors';
import type { Result } from '@gw/errors';

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
  environment: z.enum(['live', 'test'], { error: 'expected "live" or "test"' }),
  residency: z.enum(['uk', 'eu'], { error: 'expected "uk" or "eu"' }),
  privacy_mode: z.enum(['off', 'flag', 'redact', 'tokenise'], {
    error: 'expected "off", "flag", "redact" or "tokenise"',
  }),
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

/** Unknown field names are caller text too: a few, each cut, and how many more. */
const shownUnknownKeys = 3;

function unknownFieldsMessage(keys: readonly string[]): string {
  const shown = keys.slice(0, shownUnknownKeys).map(quoted).join(', ');
  const more = keys.length > shownUnknownKeys ? ` and ${keys.length - shownUnknownKeys} more` : '';
  return `unknown field${keys.length > 1 ? 's' : ''} ${shown}${more}.`;
}

/** Parses a JSON body against a schema; a failure is a 400 naming the field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): Result<z.infer<S>> {
  const result = schema.safeParse(body ?? {});
  if (result.success) return ok(result.data);
  const issue = result.error.issues[0]!;
  const message =
    issue.code === 'unrecognized_keys'
      ? unknownFieldsMessage(issue.keys)
      : issue.path.length === 0
        ? 'The request body must be a JSON object.'
        : `${issue.path.join('.')}: ${issue.message}.`;
  return err(gatewayError('invalid_request_error', message));
}
