/**
 * Betas an adapter that translates did not pass on: the response header that names them to the caller
 * and the counter that counts them, one definition for every service that reports them.
 */
export const droppedBetasHeader = 'x-gateway-dropped-betas';

export const betasDroppedMetric = {
  name: 'gateway_upstream_betas_dropped_total',
  help: 'Beta names a caller sent that the pool’s provider does not support, dropped rather than refused.',
  labelNames: ['provider', 'beta'] as const,
};

/**
 * Published beta names a metric label may carry; any other name is `other`, since the header is caller
 * text and a label's values must be bounded.
 */
export const labelledBetas: readonly string[] = [
  'advanced-tool-use-2025-11-20',
  'claude-code-20250219',
  'computer-use-2024-10-22',
  'computer-use-2025-01-24',
  'context-1m-2025-08-07',
  'context-management-2025-06-27',
  'effort-2025-11-24',
  'extended-cache-ttl-2025-04-11',
  'files-api-2025-04-14',
  'fine-grained-tool-streaming-2025-05-14',
  'interleaved-thinking-2025-05-14',
  'mcp-client-2025-04-04',
  'message-batches-2024-09-24',
  'mid-conversation-system-2026-04-07',
  'oauth-2025-04-20',
  'output-128k-2025-02-19',
  'pdfs-2024-09-25',
  'prompt-caching-2024-07-31',
  'prompt-caching-scope-2026-01-05',
  'structured-outputs-2025-11-13',
  'thinking-token-count-2026-05-13',
  'token-counting-2024-11-01',
  'token-efficient-tools-2025-02-19',
  'tool-examples-2025-10-29',
  'tool-search-tool-2025-10-19',
];

/** The metric label of a beta name: itself when published, else `other`. */
export function betaLabel(name: string): string {
  return labelledBetas.includes(name) ? name : 'other';
}

/** The header's value: the dropped names, comma-separated, each cut to 64 characters and at most 16 of them. */
export function droppedBetasHeaderValue(names: readonly string[]): string {
  return names
    .slice(0, 16)
    .map((name) => name.slice(0, 64).replace(/[^\x21-\x7e]/g, '?'))
    .join(',');
}
