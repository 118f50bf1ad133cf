type JsonObject = Record<string, unknown>;

const isJsonObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Characters (UTF-16 code units) of every string value inside a JSON value; keys, numbers and booleans count 0. */
function totalStringLength(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + totalStringLength(item), 0);
  if (isJsonObject(value)) return Object.values(value).reduce((sum: number, item) => sum + totalStringLength(item), 0);
  return 0;
}

/**
 * The gateway's own input-token estimate for a Messages (or count_tokens) body, where no upstream
 * counts: a quarter of the characters of every string value in `system`, `messages` and `tools`,
 * rounded up, at least 1. Message text, tool-use inputs, tool results and tool definitions all
 * count through their string values; object keys, numbers and the other fields do not. The test-key
 * stub reports it as `input_tokens`, CountTokens answers it with `estimated: true`, and the
 * simulated upstream uses the same rule, so that all three agree; ingress bills it as the input of a request that
 * ended before the upstream reported usage (docs/decisions.md). See the router's README.md.
 */
export function estimateInputTokens(body: JsonObject): number {
  const characters = totalStringLength(body.system) + totalStringLength(body.messages) + totalStringLength(body.tools);
  return Math.max(1, Math.ceil(characters / 4));
}
