import pino from 'pino';
import type { Logger, LoggerOptions } from 'pino';

export type { Logger };

/** Longest string a log line carries in one field: caller text can be any length, a log line must not. */
export const maxLoggedChars = 256;

/** An error's stack may run longer (its frames are the gateway's own), within this. */
const maxLoggedStackChars = 4096;

/** Containers below this depth are logged as they are: log fields are flat, a deep structure is not caller input. */
const cappedDepth = 3;

/** Text cut to `max` characters, marked with its original length; shorter text is returned as it is. */
export function cutForLog(text: string, max = maxLoggedChars): string {
  if (text.length <= max) return text;
  // Never end on the first half of a surrogate pair.
  const end = text.charCodeAt(max - 1) >= 0xd800 && text.charCodeAt(max - 1) <= 0xdbff ? max - 1 : max;
  return `${text.slice(0, end)}…[cut, ${text.length} chars]`;
}

const isPlainObject = (value: object): value is Record<string, unknown> => {
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
};

/**
 * `value` with every string in it cut to the cap, through plain objects and arrays a few levels down.
 * Copies only the containers on the way to a string it cuts, so the usual line (short ids and counts)
 * costs one look at each field and no allocation.
 */
function capStrings(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return cutForLog(value);
  if (typeof value !== 'object' || value === null || depth >= cappedDepth) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((item: unknown, index) => {
      const capped = capStrings(item, depth + 1);
      if (capped !== item) (copy ??= [...value])[index] = capped;
    });
    return copy ?? value;
  }
  if (!isPlainObject(value)) return value;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const capped = capStrings(value[key], depth + 1);
    if (capped !== value[key]) (copy ??= { ...value })[key] = capped;
  }
  return copy ?? value;
}

/**
 * An error as pino writes it, with its message (and every other string) cut to the cap. Its stack keeps
 * the gateway's frames but not the message whole: the message opens the stack and may quote a caller.
 */
function cappedError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  // pino's form: type, message and stack (with those of the causes), then the error's own fields.
  const { type, message, stack, ...fields }: Record<string, unknown> = pino.stdSerializers.err(error);
  const text = typeof message === 'string' ? message : '';
  const frames =
    typeof stack === 'string' && text.length > maxLoggedChars ? stack.replace(text, () => cutForLog(text)) : stack;
  return {
    type,
    message: capStrings(message, 0),
    stack: typeof frames === 'string' ? cutForLog(frames, maxLoggedStackChars) : frames,
    ...(capStrings(fields, 0) as Record<string, unknown>),
  };
}

/**
 * The options of every service's logger. Key material never reaches a log: header names that carry keys
 * are redacted wherever they appear. Caller text never reaches it whole: every string field, an error's
 * message and the line's own message are cut to `maxLoggedChars` with a marker and the original length.
 */
export function loggerOptions(service: string, level: string): LoggerOptions {
  return {
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['*.authorization', '*["x-api-key"]', '*.key', '*.headers.authorization', '*.headers["x-api-key"]'],
      censor: '[redacted]',
    },
    formatters: { log: (fields) => capStrings(fields, 0) as Record<string, unknown> },
    // `msg` too: a line logged with an error and no message of its own takes the error's message.
    serializers: { err: cappedError, msg: (message: unknown) => capStrings(message, 0) },
  };
}

/** One JSON line per event on stdout; services log ids and counts, never bodies. */
export function createLogger(service: string, level: string): Logger {
  return pino(loggerOptions(service, level));
}
