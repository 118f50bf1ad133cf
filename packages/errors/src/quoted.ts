/** Caller text repeated in a message is cut to this many characters. */
export const echoedChars = 64;

/**
 * Caller text as an error message repeats it: in double quotes, cut to 64 characters (code points, so a
 * surrogate pair is never split) and `…`, control characters escaped as `\uXXXX`, so that no value can
 * make a message long or drive the terminal it is printed on. Every service echoes through this one.
 */
export function quoted(text: string): string {
  const head = Array.from(text.slice(0, echoedChars * 2))
    .slice(0, echoedChars)
    .join('');
  const cut = head.length < text.length ? `${head}…` : head;
  return JSON.stringify(cut).replace(
    /\p{Cc}/gu,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
