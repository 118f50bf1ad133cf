import { isPlaceholderPrefix, maxPlaceholderLength, OPEN, placeholderPattern } from './placeholder';

/** Placeholder → original value, for one request (what tokenise returns; plain object, serialisable). */
export type TokenMap = Readonly<Record<string, string>>;

export interface RestoreOptions {
  /**
   * The text is JSON source (an `input_json_delta.partial_json` stream, OpenAI `function.arguments`): restored
   * values are JSON-string-escaped, so the result stays valid JSON and parses back to the original value.
   */
  readonly json?: boolean;
}

export interface Restorer {
  /** Appends a chunk; returns the text that can be released now (possibly ''). */
  push(chunk: string): string;
  /** End of the stream: returns everything still held back (an unfinished placeholder is released as is). */
  flush(): string;
  /** Restores a whole, non-streamed text (independent of the stream state). */
  restoreAll(text: string): string;
}

/** The JSON string-literal body of a value: what goes between the quotes. */
export function jsonEscape(value: string): string {
  return JSON.stringify(value).slice(1, -1);
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

/**
 * A streaming restorer for one content block.
 *
 * Algorithm (per push): buffer = held-back text + chunk. Every COMPLETE placeholder of this nonce is replaced in
 * one left-to-right pass of a single regex (placeholders that are not in the map — another nonce, a number the
 * model invented — stay as they are). Then, from the end of the last complete placeholder on, the restorer looks
 * for the earliest '[' whose rest of the buffer is still a proper prefix of a placeholder of this nonce
 * (`isPlaceholderPrefix`; only the last maxPlaceholderLength − 1 characters can qualify): that suffix is held
 * back, everything before it is released. A released text never ends in the first half of a surrogate pair.
 * So at most maxPlaceholderLength − 1 characters are ever held, text that cannot start a placeholder is released
 * at once, and the concatenation of all pushes and the flush equals restoreAll of the concatenated input, for
 * every way of cutting the stream.
 */
export function createRestorer(map: TokenMap, nonce: string, options: RestoreOptions = {}): Restorer {
  const pattern = placeholderPattern(nonce);
  const values = new Map<string, string>();
  for (const [token, value] of Object.entries(map))
    values.set(token, options.json === true ? jsonEscape(value) : value);
  const window = maxPlaceholderLength(nonce) - 1;
  let pending = '';

  /** Replaces complete placeholders in buffer; returns the output and where the last one ended. */
  const replaceComplete = (buffer: string): { output: string; tailFrom: number } => {
    let output = '';
    let last = 0;
    pattern.lastIndex = 0;
    for (let match = pattern.exec(buffer); match !== null; match = pattern.exec(buffer)) {
      output += buffer.slice(last, match.index) + (values.get(match[0]) ?? match[0]);
      last = match.index + match[0].length;
    }
    return { output, tailFrom: last };
  };

  const restoreAll = (text: string): string => {
    if (!text.includes(OPEN)) return text;
    const { output, tailFrom } = replaceComplete(text);
    return output + text.slice(tailFrom);
  };

  return {
    push(chunk: string): string {
      if (chunk.length === 0) return '';
      const buffer = pending + chunk;
      const { output, tailFrom } = buffer.includes('[') ? replaceComplete(buffer) : { output: '', tailFrom: 0 };
      let hold = buffer.length;
      for (let index = Math.max(tailFrom, buffer.length - window); index < buffer.length; index += 1) {
        if (buffer.charCodeAt(index) === 91 && isPlaceholderPrefix(buffer, index, nonce)) {
          hold = index;
          break;
        }
      }
      if (hold > tailFrom && isHighSurrogate(buffer.charCodeAt(hold - 1))) hold -= 1;
      pending = buffer.slice(hold);
      return output + buffer.slice(tailFrom, hold);
    },
    flush(): string {
      const rest = pending;
      pending = '';
      return restoreAll(rest);
    },
    restoreAll,
  };
}

/** Restores a whole (non-streamed) text. */
export function restoreAll(text: string, map: TokenMap, nonce: string, options: RestoreOptions = {}): string {
  return createRestorer(map, nonce, options).restoreAll(text);
}
