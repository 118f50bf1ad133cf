import type { z } from 'zod';
import { err, gatewayError, ok, quoted } from '@gw/errors';
import type { Result } from '@gw/errors';

// The bodies are declared once, with their routes, in @gw/admin-api.
export {
  createAccountBody,
  createAdminKeyBody,
  createEndpointBody,
  createKeyBody,
  setLimitsBody,
  updateKeyBody,
} from '@gw/admin-api';

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
