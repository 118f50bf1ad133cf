import { z } from 'zod';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';

const contentBlock = z.looseObject({ type: z.string({ error: 'expected a content block with a string "type"' }) });

/** The fields the gateway itself needs; every other parameter is passed through untouched. */
const messagesBody = z.looseObject({
  model: z.string({ error: 'expected a model alias (string)' }).min(1, 'expected a non-empty model alias'),
  max_tokens: z
    .number({ error: 'expected a positive integer' })
    .int('expected a positive integer')
    .positive('expected a positive integer'),
  messages: z
    .array(
      z.looseObject({
        role: z.enum(['user', 'assistant'], { error: 'expected "user" or "assistant"' }),
        content: z.union([z.string(), z.array(contentBlock)], {
          error: 'expected a string or an array of content blocks',
        }),
      }),
      { error: 'expected an array of messages' },
    )
    .min(1, 'expected at least one message'),
  stream: z.boolean({ error: 'expected a boolean' }).optional(),
});

export type MessagesBody = z.infer<typeof messagesBody>;

function invalid(message: string) {
  return err(gatewayError('invalid_request_error', message));
}

/** Parses and checks a Messages request body; every failure names the field and what was expected. */
export function parseMessagesBody(raw: Buffer): Result<MessagesBody> {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    return invalid('The request body is not valid JSON.');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    return invalid('The request body must be a JSON object.');
  }
  const result = messagesBody.safeParse(json);
  if (result.success) return ok(result.data);
  const issue = result.error.issues[0]!;
  const field = issue.path.join('.');
  const given = issue.path.reduce<unknown>(
    (node, key) => (node as Record<PropertyKey, unknown> | undefined)?.[key],
    json,
  );
  const missing = issue.code === 'invalid_type' && given === undefined;
  return invalid(missing ? `${field}: Field required.` : `${field}: ${issue.message}.`);
}
