/** `x-privacy-flags`: counts by entity type, never values, e.g. `EMAIL=2,PHONE=1`, or `none`. */
export function privacyFlagsHeader(counts: Record<string, number>): string {
  const entries = Object.entries(counts)
    .filter(([, count]) => count > 0)
    .sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0 ? 'none' : entries.map(([type, count]) => `${type}=${count}`).join(',');
}
