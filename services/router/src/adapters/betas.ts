/** The names in an `anthropic-beta` header (comma-separated), trimmed, empty ones left out. */
export function betasOf(header: string | undefined): string[] {
  if (header === undefined) return [];
  return header
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
}

/**
 * The caller's betas split by what the upstream supports: `kept` go on as `anthropic_beta`, `dropped`
 * are named to the caller (response header) and counted, never refused, since clients such as Claude
 * Code send betas of their own that a provider does not know.
 */
export function splitBetas(
  header: string | undefined,
  supported: readonly string[],
): { kept: string[]; dropped: string[] } {
  const kept: string[] = [];
  const dropped: string[] = [];
  for (const name of betasOf(header)) (supported.includes(name) ? kept : dropped).push(name);
  return { kept, dropped };
}

/** The caller's betas of a call's headers (names in lower case), for an adapter that carries none of them. */
export function betaNamesOf(headers: Record<string, string>): string[] {
  return betasOf(headers['anthropic-beta']);
}
