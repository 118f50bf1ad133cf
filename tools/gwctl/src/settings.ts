import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** Where `make up` describes the local stack, relative to the repository root. */
export const stackEnvPath = join('.local', 'stack.env');

const defaultTimeoutMs = 10_000;

export interface Settings {
  /** Base URL of the Admin API, without a trailing slash, e.g. `http://127.0.0.1:8081`. */
  adminUrl: string;
  /** Operator token or account admin key. Never printed. */
  adminToken: string;
  timeoutMs: number;
  /** The stack.env the values came from, if any. */
  source: string | undefined;
}

export type SettingsResult = { ok: true; settings: Settings } | { ok: false; message: string };

/** Reads `NAME=value` lines; blank lines and `#` comments are skipped, surrounding quotes removed. */
export function parseEnvFile(text: string): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$/.exec(line);
    if (!match) continue;
    let value = match[2]!.trim();
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0])) {
      value = value.slice(1, -1);
    }
    entries[match[1]!] = value;
  }
  return entries;
}

/** The `.local/stack.env` in `start` or its nearest parent directory that has one. */
export function findStackEnv(start: string): string | undefined {
  let directory = resolve(start);
  for (;;) {
    const candidate = join(directory, stackEnvPath);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

/**
 * The environment wins, variable by variable; `.local/stack.env` is only read for what it lacks, so that
 * `pnpm gwctl …` works against `make up` without exporting anything.
 */
export function loadSettings(env: Record<string, string | undefined>, cwd: string): SettingsResult {
  let adminUrl = nonEmpty(env.GW_ADMIN_URL);
  let adminToken = nonEmpty(env.GW_ADMIN_TOKEN);
  let source: string | undefined;
  if (adminUrl === undefined || adminToken === undefined) {
    source = findStackEnv(cwd);
    if (source !== undefined) {
      let fileEntries: Record<string, string>;
      try {
        fileEntries = parseEnvFile(readFileSync(source, 'utf8'));
      } catch (error) {
        return { ok: false, message: `cannot read ${source}: ${(error as Error).message}` };
      }
      adminUrl ??= nonEmpty(fileEntries.GW_ADMIN_URL);
      adminToken ??= nonEmpty(fileEntries.GW_ADMIN_TOKEN);
    }
  }

  const missing = [
    adminUrl === undefined ? 'GW_ADMIN_URL' : [],
    adminToken === undefined ? 'GW_ADMIN_TOKEN' : [],
  ].flat();
  if (adminUrl === undefined || adminToken === undefined) {
    const where =
      source === undefined
        ? `the environment, and no ${stackEnvPath} was found in ${resolve(cwd)} or a parent directory`
        : `the environment nor in ${source}`;
    return {
      ok: false,
      message:
        `${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not set in ${where}. ` +
        `Export ${missing.join(' and ')}, or run \`make up\` in the repository to write ${stackEnvPath}.`,
    };
  }

  let url: URL;
  try {
    url = new URL(adminUrl);
  } catch {
    return { ok: false, message: `GW_ADMIN_URL is not a URL: ${adminUrl}` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { ok: false, message: `GW_ADMIN_URL must be an http or https URL: ${adminUrl}` };
  }
  // fetch would reject such a header with an error quoting the header, token included.
  if (!/^[\x21-\x7e]+$/.test(adminToken)) {
    return { ok: false, message: 'GW_ADMIN_TOKEN contains characters that cannot be sent in an HTTP header' };
  }

  const timeoutText = nonEmpty(env.GW_ADMIN_TIMEOUT_MS);
  const timeoutMs = timeoutText === undefined ? defaultTimeoutMs : Number(timeoutText);
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) {
    return { ok: false, message: `GW_ADMIN_TIMEOUT_MS must be a positive integer of milliseconds: ${timeoutText}` };
  }

  return { ok: true, settings: { adminUrl: adminUrl.replace(/\/+$/, ''), adminToken, timeoutMs, source } };
}
