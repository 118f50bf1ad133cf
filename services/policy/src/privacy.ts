import { countByType, createNonce, detect, redact, tokenise } from '@gw/pii';
import type { Counts, EntityType } from '@gw/pii';
import { slotText, walkRequest } from './request-walk';
import type { BodySlot } from './request-walk';
import { PrivacyMode } from '@gw/vocabulary';

export type { PrivacyMode };

/** What the privacy mode made of a request body. */
export interface PrivacyOutcome {
  /** The body to forward; undefined when unchanged. */
  body?: Uint8Array;
  /** `flag`: entities found, by type. */
  flags: Counts;
  /** `tokenise`: placeholder → original, for this request only. */
  placeholders: Record<string, string>;
  nonce: string;
  /** Set when the request cannot be forwarded in this mode: why, for the caller (a 400). */
  refusal?: string;
}

export const unchangedBody = (flags: Counts = {}): PrivacyOutcome => ({ flags, placeholders: {}, nonce: '' });

/** Shorter texts hold no entity (the shortest, an e-mail address like a@b.eu or a postcode, has five or more). */
const shortestEntity = 5;

interface Scanned {
  /** Indexes into the walk's slots of the texts scanned, and their texts. */
  readonly slots: number[];
  readonly texts: string[];
  /** Adjacent text blocks, as indexes into `texts`. */
  readonly adjacent: Array<readonly [number, number]>;
  /** Thinking blocks' text: checked, never changed. */
  readonly signed: Array<{ readonly path: string; readonly text: string }>;
  /** Every slot the walk found. */
  readonly walked: readonly BodySlot[];
}

function scannedTexts(text: string): Scanned {
  const walked = walkRequest(text);
  const joined = new Set(walked.adjacent.flat());
  const position = new Map<number, number>();
  const scanned: Scanned = { slots: [], texts: [], adjacent: [], signed: [], walked: walked.slots };
  walked.slots.forEach((slot, index) => {
    if (slot.kind === 'opaque') return;
    const value = slotText(text, slot);
    if (slot.kind === 'signed') scanned.signed.push({ path: slot.path!, text: value });
    else if (value.length >= shortestEntity || joined.has(index)) {
      position.set(index, scanned.texts.length);
      scanned.slots.push(index);
      scanned.texts.push(value);
    }
  });
  for (const [a, b] of walked.adjacent) {
    const first = position.get(a);
    const second = position.get(b);
    if (first !== undefined && second !== undefined) scanned.adjacent.push([first, second]);
  }
  return scanned;
}

/** The body's text with the changed slots replaced (as JSON strings: a number that held an entity becomes one). */
function spliced(text: string, slots: readonly BodySlot[], changes: ReadonlyMap<number, string>): Uint8Array {
  let output = '';
  let last = 0;
  for (const [index, replacement] of [...changes].sort((a, b) => a[0] - b[0])) {
    const slot = slots[index]!;
    output += text.slice(last, slot.start) + JSON.stringify(replacement);
    last = slot.end;
  }
  return Buffer.from(output + text.slice(last));
}

function refusalFor(signed: Scanned['signed']): string | undefined {
  for (const { path, text } of signed) {
    const types = [...new Set(detect(text).map((entity) => entity.type))];
    if (types.length > 0) return signedRefusal(path, types);
  }
  return undefined;
}

const signedRefusal = (path: string, types: EntityType[]): string =>
  `${path.slice(0, 200)}: this thinking block's text holds personal data (${types.join(', ')}). Its signature covers ` +
  'the text, so the privacy mode of this key can neither redact nor tokenise it; remove the block or its personal data.';

/**
 * Applies a key's privacy mode to every string and number of the request the upstream reads (request-walk.ts,
 * docs/privacy.md). Throws when the body is not JSON. Pure and synchronous, so that it runs the same inline and on
 * a worker thread; it imports neither gRPC nor the error catalogue, which would cost every thread 60 ms and 4 MB
 * to load.
 */
export function transformBody(mode: PrivacyMode, bodyJson: Uint8Array): PrivacyOutcome {
  if (mode === PrivacyMode.off) return unchangedBody();
  // A view, not a copy: the body may be tens of megabytes.
  const text = Buffer.from(bodyJson.buffer, bodyJson.byteOffset, bodyJson.byteLength).toString('utf8');
  const scanned = scannedTexts(text);
  const options = { adjacent: scanned.adjacent };
  if (mode === PrivacyMode.flag) {
    return unchangedBody(countByType([...scanned.texts, ...scanned.signed.map((slot) => slot.text)], options));
  }
  const refusal = refusalFor(scanned.signed);
  if (refusal !== undefined) return { ...unchangedBody(), refusal };
  // A mode that found nothing forwards the body as it came, byte for byte.
  const changesOf = (texts: readonly string[]) => {
    const changes = new Map<number, string>();
    texts.forEach((replaced, index) => {
      if (replaced !== scanned.texts[index]) changes.set(scanned.slots[index]!, replaced);
    });
    return changes;
  };
  if (mode === PrivacyMode.redact) {
    const changes = changesOf(redact(scanned.texts, options).texts);
    return changes.size === 0 ? unchangedBody() : { ...unchangedBody(), body: spliced(text, scanned.walked, changes) };
  }
  const nonce = createNonce();
  const tokenised = tokenise(scanned.texts, nonce, options);
  const changes = changesOf(tokenised.texts);
  if (changes.size === 0) return unchangedBody();
  return { body: spliced(text, scanned.walked, changes), flags: {}, placeholders: { ...tokenised.map }, nonce };
}
