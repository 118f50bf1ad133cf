/** Raw token counts of one request, as the upstream reported them. */
export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
  cacheReadInputTokens: number;
  cacheCreationInputTokens: number;
}

/** The weighting of docs/decisions.md: input + output + ceil(10 % of cache reads) + ceil(125 % of cache writes). */
export function billableTokens(counts: TokenCounts): number {
  return (
    counts.inputTokens +
    counts.outputTokens +
    Math.ceil(counts.cacheReadInputTokens / 10) +
    Math.ceil((counts.cacheCreationInputTokens * 5) / 4)
  );
}
