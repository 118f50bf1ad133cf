import { countByType, createNonce, redact, tokenise } from '@gw/pii';
import type { Counts } from '@gw/pii';
import { callerTexts } from './caller-texts';
import type { JsonObject } from './caller-texts';

export type PrivacyMode = 'off' | 'flag' | 'redact' | 'tokenise';

/** What the privacy mode made of a request body. */
export interface PrivacyOutcome {
  /** The body to forward; undefined when unchanged. */
  body?: Uint8Array;
  /** `flag`: entities found, by type. */
  flags: Counts;
  /** `tokenise`: placeholder → original, for this request only. */
  placeholders: Record<string, string>;
  nonce: string;
}

export const unchangedBody = (flags: Counts = {}): PrivacyOutcome => ({ flags, placeholders: {}, nonce: '' });

/**
 * Applies a key's privacy mode to every text the caller sent (docs/decisions.md). Throws when the body is not
 * what ingress validated. Pure and synchronous, so that it runs the same inline and on a worker thread; it
 * imports neither gRPC nor the error catalogue, which would cost every thread 60 ms and 4 MB to load.
 */
export function transformBody(mode: PrivacyMode, bodyJson: Uint8Array): PrivacyOutcome {
  if (mode === 'off') return unchangedBody();
  // A view, not a copy: the body may be tens of megabytes.
  const text = Buffer.from(bodyJson.buffer, bodyJson.byteOffset, bodyJson.byteLength).toString('utf8');
  const body = JSON.parse(text) as JsonObject;
  const slots = callerTexts(body);
  const texts = slots.map((slot) => slot.text);
  if (mode === 'flag') return unchangedBody(countByType(texts));
  // A mode that found nothing forwards the body as it came: byte for byte, and without serialising
  // again a body that may be tens of megabytes of images and documents.
  if (mode === 'redact') {
    const redacted = redact(texts);
    if (Object.keys(redacted.counts).length === 0) return unchangedBody();
    redacted.texts.forEach((replacement, index) => slots[index]!.replace(replacement));
    return { ...unchangedBody(), body: Buffer.from(JSON.stringify(body)) };
  }
  const nonce = createNonce();
  const tokenised = tokenise(texts, nonce);
  if (Object.keys(tokenised.map).length === 0) return unchangedBody();
  tokenised.texts.forEach((replacement, index) => slots[index]!.replace(replacement));
  return { body: Buffer.from(JSON.stringify(body)), flags: {}, placeholders: { ...tokenised.map }, nonce };
}
