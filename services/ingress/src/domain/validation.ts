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

/**
 * What the gateway reads of a message: its role (a string, whichever the upstream accepts) and its content (text,
 * or a list the privacy modes walk). Block types, roles and every other field are the upstream's to judge.
 */
const message = z.looseObject(
  {
    role: z.string({ error: 'expected a string' }),
    content: z.union([z.string(), z.array(z.unknown())], { error: 'expected a string or an array of content blocks' }),
  },
  { error: 'expected an object with "role" and "content"' },
);

/** Longest model alias taken, as the admin API's model ids: the alias travels to policy, the router and the logs. */
export const maxModelChars = 256;

/**
 * The fields the gateway acts on, type-checked: `model` (policy, routing, billing) and `messages` (privacy
 * modes, the stub, input estimates). Every other field passes through to the upstream untouched, which judges it.
 */
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
  messages: z.array(message, { error: 'expected an array of messages' }),
};

/** Messages also needs `max_tokens` (the stub's length, the allowance's estimate) and `stream` (the answer's form). */
const messagesBody = z.looseObject({
  ...commonFields,
  max_tokens: z.number({ error: 'expected an integer' }).int('expected an integer'),
  stream: z.boolean({ error: 'expected a boolean' }).optional(),
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
