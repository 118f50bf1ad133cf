/**
 * One walk over a request body's JSON text that finds every string and number the upstream will read, wherever
 * it stands: values and object keys, at any depth, in any role and any block type, known or not. The privacy
 * modes then scan each of them and replace, in the body's own text, only the tokens that change, so that
 * everything else (other numbers, integers beyond 2^53, escapes, key order, duplicate keys) reaches the upstream
 * byte for byte.
 *
 * Left out, because they hold no text the model reads: base64 `data` (of an object whose `type` is `base64`),
 * the encrypted `data` of redacted thinking, a thinking block's `signature`, the ids of tool calls and of files
 * (when they look like ids), the top-level `model` (the gateway routes on it), and the API's typed numeric
 * parameters (the top level's numbers and those of the `thinking` setting). A thinking block's text is returned
 * apart: its signature covers it, so it can be checked but never changed.
 */

/**
 * What a slot is: a string value, an object key, a number's literal, a thinking block's signed text, or an opaque
 * value (base64, an id, a signature) that is not scanned.
 */
export type SlotKind = 'string' | 'key' | 'number' | 'signed' | 'opaque';

export interface BodySlot {
  kind: SlotKind;
  /** [start, end) of the JSON token in the body text (a string's quotes included). */
  readonly start: number;
  readonly end: number;
  /** Signed slots only: where the block stands (`messages.1.content.0.thinking`), for a refusal. */
  path?: string;
}

export interface WalkedBody {
  /** Every slot, in the order of the text (opaque ones included: they are skipped, not removed). */
  readonly slots: BodySlot[];
  /**
   * Text slots of text blocks that follow one another in one content array (indexes into `slots`): a value split
   * across the two is still found.
   */
  readonly adjacent: Array<readonly [number, number]>;
}

/** Keys whose value's fate depends on the `type` of the object holding them, known only once it closes. */
const DEFERRED_KEYS = new Set(['data', 'thinking', 'signature', 'id', 'tool_use_id', 'file_id', 'text']);

const ID_SHAPE = /^[A-Za-z0-9_-]{1,256}$/;

interface Frame {
  readonly array: boolean;
  readonly parent: Frame | null;
  /** Where this value stands in its parent: a key or an index. */
  readonly place: string | number | null;
  /** Object: the key whose value comes next; array: the index of the next element. */
  key: string;
  index: number;
  /** Object: its `type`, when a string. */
  type?: string;
  /** Object: string slots whose fate depends on `type`. */
  deferred?: Array<{ key: string; slot: number }>;
  /** Array: the element index and text slot of the last text block closed in it. */
  lastText?: { index: number; slot: number };
}

class MalformedBody extends Error {}

const isDigit = (unit: number): boolean => unit >= 48 && unit <= 57;
const isSpace = (unit: number): boolean => unit === 32 || unit === 10 || unit === 13 || unit === 9;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

/** The index just after the string token that starts (with its quote) at `start`. */
function stringEnd(text: string, start: number): number {
  let from = start + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) throw new MalformedBody('unterminated string');
    let backslash = quote - 1;
    while (text.charCodeAt(backslash) === 92) backslash -= 1;
    if ((quote - 1 - backslash) % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** The decoded value of the JSON string token [start, end). */
export function decodeString(text: string, start: number, end: number): string {
  const raw = text.slice(start + 1, end - 1);
  return raw.includes('\\') ? (JSON.parse(text.slice(start, end)) as string) : raw;
}

/** The text a slot's scan reads: a string decoded, a number as written. */
export function slotText(text: string, slot: BodySlot): string {
  return slot.kind === 'number' ? text.slice(slot.start, slot.end) : decodeString(text, slot.start, slot.end);
}

function pathOf(frame: Frame, last: string): string {
  const parts = [last];
  for (let at: Frame | null = frame; at !== null && at.place !== null; at = at.parent) parts.push(String(at.place));
  return parts.reverse().join('.');
}

/** Numbers the API types (max_tokens, temperature, thinking's budget_tokens…) hold no personal data. */
function typedNumber(frame: Frame): boolean {
  return frame.parent === null || (frame.parent.parent === null && frame.place === 'thinking');
}

class Walker {
  readonly slots: BodySlot[] = [];
  readonly adjacent: Array<readonly [number, number]> = [];
  private at = 0;

  constructor(private readonly text: string) {}

  walk(): WalkedBody {
    let frame: Frame | null = null;
    this.skipSpace();
    for (;;) {
      // At a value: a scalar is read whole; an object or array opens a frame, whose first value comes next.
      const unit = this.text.charCodeAt(this.at);
      if (unit === 123 || unit === 91) {
        const array = unit === 91;
        const place: string | number | null = frame === null ? null : frame.array ? frame.index : frame.key;
        frame = { array, parent: frame, place, key: '', index: 0 };
        this.at += 1;
        this.skipSpace();
        if (this.text.charCodeAt(this.at) !== (array ? 93 : 125)) {
          if (!array) this.key(frame);
          continue;
        }
      } else {
        this.scalar(frame);
      }
      // After a value: close what ends, then move to the next key or element.
      for (;;) {
        this.skipSpace();
        if (frame === null) {
          if (this.at !== this.text.length) throw new MalformedBody('text after the body');
          return { slots: this.slots, adjacent: this.adjacent };
        }
        const next = this.text.charCodeAt(this.at);
        if (next === 44) {
          this.at += 1;
          this.skipSpace();
          if (frame.array) frame.index += 1;
          else this.key(frame);
          break;
        }
        if (next !== (frame.array ? 93 : 125)) throw new MalformedBody('expected , or a closing bracket');
        this.at += 1;
        if (!frame.array) this.settle(frame);
        frame = frame.parent;
      }
    }
  }

  /** Reads a string, number or literal inside `frame`. */
  private scalar(frame: Frame | null): void {
    const unit = this.text.charCodeAt(this.at);
    if (unit === 34) {
      const start = this.at;
      this.at = stringEnd(this.text, start);
      this.stringValue(frame, start, this.at);
      return;
    }
    if (unit === 45 || isDigit(unit)) {
      NUMBER.lastIndex = this.at;
      if (!NUMBER.test(this.text)) throw new MalformedBody('bad number');
      const start = this.at;
      this.at = NUMBER.lastIndex;
      if (frame !== null && !typedNumber(frame)) this.slots.push({ kind: 'number', start, end: this.at });
      return;
    }
    for (const literal of ['true', 'false', 'null']) {
      if (this.text.startsWith(literal, this.at)) {
        this.at += literal.length;
        return;
      }
    }
    throw new MalformedBody('unexpected character');
  }

  /** Reads a key and its colon: the key is a slot of its own. */
  private key(frame: Frame): void {
    if (this.text.charCodeAt(this.at) !== 34) throw new MalformedBody('expected a key');
    const start = this.at;
    this.at = stringEnd(this.text, start);
    frame.key = decodeString(this.text, start, this.at);
    this.slots.push({ kind: 'key', start, end: this.at });
    this.skipSpace();
    if (this.text.charCodeAt(this.at) !== 58) throw new MalformedBody('expected :');
    this.at += 1;
    this.skipSpace();
  }

  private stringValue(frame: Frame | null, start: number, end: number): void {
    if (frame === null || frame.array) {
      this.slots.push({ kind: 'string', start, end });
      return;
    }
    const key = frame.key;
    if (frame.parent === null && key === 'model') return;
    if (key === 'type') frame.type = decodeString(this.text, start, end);
    this.slots.push({ kind: 'string', start, end });
    if (DEFERRED_KEYS.has(key)) (frame.deferred ??= []).push({ key, slot: this.slots.length - 1 });
  }

  /** An object closed: its `type` decides what its deferred values are. */
  private settle(frame: Frame): void {
    if (frame.deferred === undefined) return;
    const type = frame.type ?? '';
    for (const { key, slot } of frame.deferred) {
      const found = this.slots[slot]!;
      if (this.opaque(type, key, found)) found.kind = 'opaque';
      else if (type === 'thinking' && key === 'thinking') {
        found.kind = 'signed';
        found.path = pathOf(frame, key);
      } else if (type === 'text' && key === 'text') this.textBlock(frame, slot);
    }
  }

  private opaque(type: string, key: string, slot: BodySlot): boolean {
    switch (key) {
      case 'data':
        return type === 'base64' || type === 'redacted_thinking';
      case 'signature':
        return type === 'thinking';
      case 'id':
        return type.endsWith('tool_use') && this.idShaped(slot);
      case 'tool_use_id':
        return type.endsWith('tool_result') && this.idShaped(slot);
      case 'file_id':
        return type === 'file' && this.idShaped(slot);
      default:
        return false;
    }
  }

  private idShaped(slot: BodySlot): boolean {
    return ID_SHAPE.test(this.text.slice(slot.start + 1, slot.end - 1));
  }

  /** A text block's text: joined to the text of the text block just before it in the same array. */
  private textBlock(frame: Frame, slot: number): void {
    const parent = frame.parent;
    if (parent === null || !parent.array || typeof frame.place !== 'number') return;
    if (parent.lastText !== undefined && parent.lastText.index === frame.place - 1) {
      this.adjacent.push([parent.lastText.slot, slot]);
    }
    parent.lastText = { index: frame.place, slot };
  }

  private skipSpace(): void {
    while (this.at < this.text.length && isSpace(this.text.charCodeAt(this.at))) this.at += 1;
  }
}

/** Walks a body's JSON text; throws when it is not one JSON value. */
export function walkRequest(text: string): WalkedBody {
  return new Walker(text).walk();
}
