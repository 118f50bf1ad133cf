/**
 * The key a request presents. `Authorization: Bearer` wins over `x-api-key` when both are sent
 * (docs/public-api.md, "Authentication"); an empty string means none was sent, which auth refuses like any bad key.
 */
export function presentedKey(authorization: string | undefined, apiKey: string | string[] | undefined): string {
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    return match ? match[1]! : '';
  }
  if (typeof apiKey === 'string') return apiKey.trim();
  return '';
}

/** The credential header a request sends more than once (`Authorization` first), if any. */
export function repeatedCredentialHeader(headers: NodeJS.Dict<string[]>): string | undefined {
  if ((headers.authorization?.length ?? 0) > 1) return 'Authorization';
  if ((headers['x-api-key']?.length ?? 0) > 1) return 'x-api-key';
  return undefined;
}
