import { z } from 'zod';
import { err, gatewayError, ok, quoted } from '@gw/errors';
import type { Result } from '@gw/errors';

/** Deeper JSON is refused before parsing: no legitimate request nests this far, and parsing it costs stack. */
export const maxJsonDepth = 128;
/**
 * More objects and arrays than this are refused before parsing too: each costs the parser about 64 bytes of
 * heap, so 32 MiB of `{}` would take 700 MB of a check thread (and of policy's privacy thread after it).
 */
export const maxJsonContainers = 1_000_000;

const contentBlock = z.looseObject({ type: z.string({ error: 'expected a content block with a string "type"' }) });
const textBlock = z.looseObject({
  type: z.literal('text', { error: 'expected a text block' }),
  text: z.string({ error: 'expected a string' }),
});

const message = z.looseObject({
  role: z.enum(['user', 'assistant'], { error: 'expected "user" or "assistant"' }),
  content: z.union([z.string(), z.array(contentBlock)], { error: 'expected a string or an array of content blocks' }),
});

const unitInterval = (name: string) =>
  z
    .number({ error: `expected a number between 0 and 1` })
    .min(0, `expected a number between 0 and 1`)
    .max(1, `expected a number between 0 and 1`)
    .describe(name);

const toolChoice = z.discriminatedUnion(
  'type',
  [
    z.looseObject({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
    z.looseObject({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
    z.looseObject({
      type: z.literal('tool'),
      name: z.string({ error: 'expected the tool name' }).min(1, 'expected the tool name'),
      disable_parallel_tool_use: z.boolean().optional(),
    }),
    z.looseObject({ type: z.literal('none') }),
  ],
  { error: 'expected an object whose "type" is "auto", "any", "tool" or "none"' },
);

const thinking = z.discriminatedUnion(
  'type',
  [
    z.looseObject({
      type: z.literal('enabled'),
      budget_tokens: z
        .number({ error: 'expected an integer of at least 1024' })
        .int('expected an integer of at least 1024')
        .min(1024, 'expected an integer of at least 1024'),
    }),
    z.looseObject({ type: z.literal('disabled') }),
    z.looseObject({ type: z.literal('adaptive') }),
  ],
  { error: 'expected an object whose "type" is "enabled", "disabled" or "adaptive"' },
);

/** Longest model alias taken, as the admin API's model ids: the alias travels to policy, the router and the logs. */
export const maxModelChars = 256;

/** Fields shared by Messages and count_tokens, type-checked; unknown fields pass through untouched. */
const commonFields = {
  model: z
    .string({ error: 'expected a model alias (string)' })
    .min(1, 'expected a non-empty model alias')
    .max(maxModelChars, {
      error: (issue) => {
        const given = String(issue.input);
        return `expected at most ${maxModelChars} characters, got ${given.length}: ${quoted(given)}`;
      },
    }),
  messages: z.array(message, { error: 'expected an array of messages' }).min(1, 'expected at least one message'),
  system: z
    .union([z.string(), z.array(textBlock)], { error: 'expected a string or an array of text blocks' })
    .optional(),
  tools: z.array(z.looseObject({}), { error: 'expected an array of tool definitions' }).optional(),
  tool_choice: toolChoice.optional(),
  thinking: thinking.optional(),
};

const messagesBody = z.looseObject({
  ...commonFields,
  max_tokens: z
    .number({ error: 'expected a positive integer' })
    .int('expected a positive integer')
    .positive('expected a positive integer'),
  stream: z.boolean({ error: 'expected a boolean' }).optional(),
  temperature: unitInterval('temperature').optional(),
  top_p: unitInterval('top_p').optional(),
  top_k: z
    .number({ error: 'expected a non-negative integer' })
    .int('expected a non-negative integer')
    .nonnegative('expected a non-negative integer')
    .optional(),
  stop_sequences: z.array(z.string(), { error: 'expected an array of strings' }).optional(),
  metadata: z
    .looseObject(
      { user_id: z.string({ error: 'expected a string or null' }).nullable().optional() },
      {
        error: 'expected an object',
      },
    )
    .optional(),
});

const countTokensBody = z.looseObject(commonFields);

export type MessagesBody = z.infer<typeof messagesBody>;
export type CountTokensBody = z.infer<typeof countTokensBody>;

function invalid(message: string) {
  return err(gatewayError('invalid_request_error', message));
}

/**
 * Which bound the body's brackets pass, if any: nesting deeper than `depth`, or more than `containers` objects
 * and arrays in all. Found in one pass over the bytes, without parsing.
 */
export function jsonShapeBeyond(
  raw: Buffer,
  bounds: { depth: number; containers: number },
): 'depth' | 'containers' | undefined {
  let depth = 0;
  let containers = 0;
  let inString = false;
  for (let index = 0; index < raw.length; index += 1) {
    const byte = raw[index]!;
    if (inString) {
      if (byte === 0x5c)
        index += 1; // backslash: skip the escaped byte
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) inString = true;
    else if (byte === 0x7b || byte === 0x5b) {
      depth += 1;
      containers += 1;
      if (depth > bounds.depth) return 'depth';
      if (containers > bounds.containers) return 'containers';
    } else if (byte === 0x7d || byte === 0x5d) depth -= 1;
  }
  return undefined;
}

function parseWith<S extends z.ZodType>(schema: S, raw: Buffer): Result<z.infer<S>> {
  const beyond = jsonShapeBeyond(raw, { depth: maxJsonDepth, containers: maxJsonContainers });
  if (beyond === 'depth') return invalid(`The request body nests deeper than ${maxJsonDepth} levels.`);
  if (beyond === 'containers') {
    return invalid(`The request body holds more than ${maxJsonContainers} JSON objects and arrays.`);
  }
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    return invalid('The request body is not valid JSON.');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    return invalid('The request body must be a JSON object.');
  }
  const result = schema.safeParse(json);
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

/** Parses and checks a Messages request body; every failure names the field and what was expected. */
export function parseMessagesBody(raw: Buffer): Result<MessagesBody> {
  return parseWith(messagesBody, raw);
}

/** The same for POST /v1/messages/count_tokens (no max_tokens, no sampling parameters). */
export function parseCountTokensBody(raw: Buffer): Result<CountTokensBody> {
  return parseWith(countTokensBody, raw);
}

/** A JSON media type, or none given; anything else is refused before the body is read. */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return true;
  const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
  return mediaType === 'application/json' || mediaType.endsWith('+json');
}
