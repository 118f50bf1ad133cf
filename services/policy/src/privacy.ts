import { countByType, createNonce, redact, tokenise } from '@gw/pii';
import type { Counts } from '@gw/pii';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { callerTexts } from './caller-texts';
import type { JsonObject } from './caller-texts';

export type PrivacyMode = 'off' | 'flag' | 'redact' | 'tokenise';

/** What the privacy mode made of a request body. */
export interface PrivacyOutcome {
  /** The body to forward; undefined when unchanged. */
  body?: Buffer;
  /** `flag`: entities found, by type. */
  flags: Counts;
  /** `tokenise`: placeholder → original, for this request only. */
  placeholders: Record<string, string>;
  nonce: string;
}

const unchanged = (flags: Counts = {}): PrivacyOutcome => ({ flags, placeholders: {}, nonce: '' });

/**
 * Applies a key's privacy mode to every text the caller sent (docs/decisions.md). Fails closed: anything that
 * goes wrong is an api_error and the request is never forwarded unprocessed.
 */
export function applyPrivacyMode(mode: PrivacyMode, bodyJson: Uint8Array): Result<PrivacyOutcome> {
  if (mode === 'off') return ok(unchanged());
  try {
    const body = JSON.parse(Buffer.from(bodyJson).toString('utf8')) as JsonObject;
    const slots = callerTexts(body);
    const texts = slots.map((slot) => slot.text);
    if (mode === 'flag') return ok(unchanged(countByType(texts)));
    if (mode === 'redact') {
      const redacted = redact(texts);
      redacted.texts.forEach((text, index) => slots[index]!.replace(text));
      return ok({ ...unchanged(), body: Buffer.from(JSON.stringify(body)) });
    }
    const nonce = createNonce();
    const tokenised = tokenise(texts, nonce);
    tokenised.texts.forEach((text, index) => slots[index]!.replace(text));
    return ok({ body: Buffer.from(JSON.stringify(body)), flags: {}, placeholders: { ...tokenised.map }, nonce });
  } catch {
    return err(
      gatewayError(
        'api_error',
        'The privacy step failed for this request; it was not forwarded. Retry once, then contact support quoting the x-request-id header.',
      ),
    );
  }
}
