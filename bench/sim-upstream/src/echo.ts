/**
 * The echo's chunks: one per word, each carrying the whitespace before it (the last also the
 * whitespace after it), so that joining them gives back the text exactly. Each chunk counts as one
 * output token.
 */
export function echoChunks(text: string): string[] {
  return text.match(/\s*\S+(\s+$)?/g) ?? [];
}
