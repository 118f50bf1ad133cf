import { readFile, writeFile } from 'node:fs/promises';

/** Reads KEY=value lines; a missing file is an empty map. */
export async function readEnvFile(path: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return {};
  }
  const entries: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (match) entries[match[1]!] = match[2]!;
  }
  return entries;
}

export async function writeEnvFile(path: string, entries: Record<string, string>, mode = 0o600): Promise<void> {
  const text = Object.entries(entries)
    .map(([name, value]) => `${name}=${value}`)
    .join('\n');
  await writeFile(path, `${text}\n`, { mode });
}
