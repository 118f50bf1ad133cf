/**
 * The `anthropic-beta` names of a call. Adapters that speak the Messages protocol pass the header on for the
 * upstream to judge; an adapter that translates to another protocol takes the betas its upstream supports and
 * drops the rest, which the caller learns from the `x-gateway-dropped-betas` response header and operators
 * from `router_upstream_betas_dropped_total`.
 */

/** The names in an `anthropic-beta` value (comma-separated; a repeated header arrives joined with commas). */
export function betaNamesOf(headers: Record<string, string>): string[] {
  const value = headers['anthropic-beta'];
  if (value === undefined) return [];
  return value
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
}

/**
 * Betas published by the upstream's vendor, the metric's label values; any other name counts as `other`, so that
 * callers cannot grow the metric's series.
 */
export const publishedBetas: readonly string[] = [
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
];

/** A dropped beta as a metric label. */
export function betaLabel(name: string): string {
  return publishedBetas.includes(name) ? name : 'other';
}

/** Longest beta name named in the response header, and how many: the names are the caller's own text. */
const maxNameChars = 64;
const maxNames = 32;

/** Dropped names as they may be told back in a response header: header-safe tokens only, bounded. */
export function reportableBetas(names: readonly string[]): string[] {
  return names.filter((name) => name.length <= maxNameChars && /^[A-Za-z0-9._-]+$/.test(name)).slice(0, maxNames);
}
