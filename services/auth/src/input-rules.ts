import { findInvalidEntry, maxAllowListEntries } from '@gw/addresses';
import { err, gatewayError, ok, quoted } from '@gw/errors';
import type { Result } from '@gw/errors';
import { maxAllowedModels, maxModelIdChars, maxNameChars } from '@gw/vocabulary';

/**
 * What a caller may store, checked here and not only by the admin API: auth is reachable by any
 * service, and a name is shown in every listing. Lengths count characters (code points), after trimming.
 */
/** Keys neither revoked nor expired, per account: bounds what one admin key can create. */
export const maxLiveKeysPerAccount = 500;
export const maxLiveAdminKeysPerAccount = 20;

const controlCharacter = /\p{Cc}/u;
/**
 * Characters that change how the text around them shows, or show as nothing: bidirectional controls
 * (U+202E makes "gnp.exe" read "exe.png"), zero-width and other format characters, separators of
 * lines and paragraphs, and blank fillers.
 */
const invisibleCharacter = /[\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\u115F\u1160\u3164\uFFA0\u2800\u180E]/u;

/** Whether text has more than `max` code points; text of at most `max` UTF-16 units cannot. */
const longerThan = (text: string, max: number) => text.length > max && [...text].length > max;

const invalid = (message: string) => err(gatewayError('invalid_request_error', message));

/** An account or key name: trimmed, 1 to 200 characters, no control, bidirectional or invisible characters. */
export function checkName(name: string): Result<string> {
  const trimmed = name.trim();
  if (trimmed.length === 0) return invalid('name: expected a non-empty string.');
  if (longerThan(trimmed, maxNameChars)) return invalid(`name: expected at most ${maxNameChars} characters.`);
  if (controlCharacter.test(trimmed)) return invalid('name: must not contain control characters.');
  if (invisibleCharacter.test(trimmed)) {
    return invalid('name: must not contain bidirectional controls or invisible characters.');
  }
  return ok(trimmed);
}

export function checkAllowedModels(models: readonly string[]): Result<void> {
  if (models.length > maxAllowedModels) return invalid(`allowed_models: expected at most ${maxAllowedModels} models.`);
  const index = models.findIndex((model) => model.length === 0 || longerThan(model, maxModelIdChars));
  if (index >= 0) return invalid(`allowed_models.${index}: expected a model id of 1 to ${maxModelIdChars} characters.`);
  return ok(undefined);
}

/** Only canonical addresses and ranges (docs/decisions.md), at most 1,000 of them. */
export function checkAllowedIps(entries: readonly string[]): Result<void> {
  if (entries.length > maxAllowListEntries) {
    return invalid(`allowed_ips: expected at most ${maxAllowListEntries} entries.`);
  }
  const found = findInvalidEntry(entries);
  if (found) return invalid(`allowed_ips.${found.index}: ${quoted(entries[found.index]!)} ${found.reason}.`);
  return ok(undefined);
}

/** A key's expiry, if it has one, is a real instant after now. */
export function checkExpiry(expiresAt: Date | null, now: Date): Result<void> {
  if (expiresAt === null) return ok(undefined);
  if (Number.isNaN(expiresAt.getTime())) return invalid('expires_at: expected an ISO 8601 timestamp.');
  if (expiresAt <= now) return invalid('expires_at: expected a time in the future.');
  return ok(undefined);
}
