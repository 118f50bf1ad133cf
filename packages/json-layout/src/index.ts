/**
 * A JSON object's top-level members found on its bytes, and edits of them without parsing and serialising it
 * again: a request passes through the gateway unchanged in every value the gateway does not set (integers beyond
 * 2^53, `1.0`, escapes and key order included), which a `JSON.parse` / `JSON.stringify` round trip would not keep.
 * Ingress finds the layout once, as it checks a body, and sends it beside the bytes; the router edits with it and
 * never reads the body again. The input is JSON that ingress has already parsed; anything else is refused
 * (undefined).
 */

/** One top-level member: its key (unescaped) and byte offsets in the object's bytes. */
export interface TopLevelMember {
  key: string;
  /** Where the member begins (its key's opening quote). */
  start: number;
  valueStart: number;
  /** Just past the value's last byte. */
  valueEnd: number;
}

/** Where an object's top-level members are, in order, and where its closing brace is. */
export interface TopLevelLayout {
  members: TopLevelMember[];
  close: number;
}

const quote = 0x22;
const backslash = 0x5c;
const openBrace = 0x7b;
const closeBrace = 0x7d;
const openBracket = 0x5b;
const closeBracket = 0x5d;
const comma = 0x2c;
const colon = 0x3a;

function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function skipWhitespace(raw: Uint8Array, index: number): number {
  while (index < raw.length && isWhitespace(raw[index]!)) index += 1;
  return index;
}

/**
 * The index just past the string that starts at `index` (its opening quote); -1 when it never closes. Jumps from
 * quote to quote with `indexOf` (native), so a long string costs little: a quote preceded by an odd number of
 * backslashes is escaped.
 */
function stringEnd(raw: Uint8Array, index: number): number {
  let from = index + 1;
  for (;;) {
    const at = raw.indexOf(quote, from);
    if (at < 0) return -1;
    let backslashes = 0;
    while (raw[at - 1 - backslashes] === backslash) backslashes += 1;
    if (backslashes % 2 === 0) return at + 1;
    from = at + 1;
  }
}

/** The index just past the value that starts at `index`; -1 when the bytes end first. */
function valueEnd(raw: Uint8Array, index: number): number {
  const first = raw[index];
  if (first === quote) return stringEnd(raw, index);
  if (first === openBrace || first === openBracket) {
    let depth = 0;
    for (let at = index; at < raw.length; at += 1) {
      const byte = raw[at]!;
      if (byte === quote) {
        at = stringEnd(raw, at) - 1;
        if (at < 0) return -1;
      } else if (byte === openBrace || byte === openBracket) depth += 1;
      else if (byte === closeBrace || byte === closeBracket) {
        depth -= 1;
        if (depth === 0) return at + 1;
      }
    }
    return -1;
  }
  // A number, true, false or null: up to the next separator.
  let at = index;
  while (at < raw.length && !isWhitespace(raw[at]!) && raw[at] !== comma && raw[at] !== closeBrace) at += 1;
  return at > index ? at : -1;
}

/** A key's text, unescaped; undefined when its bytes are not a JSON string. */
function keyAt(raw: Uint8Array, start: number, end: number): string | undefined {
  try {
    const key: unknown = JSON.parse(Buffer.from(raw.buffer, raw.byteOffset + start, end - start).toString('utf8'));
    return typeof key === 'string' ? key : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The top-level members of the one JSON object whose bytes are `raw` (whitespace around it allowed), found in one
 * pass that skips every nested value without reading it. Undefined when `raw` is not one object. It checks the
 * structure only: a body `JSON.parse` refuses may still get a layout.
 */
export function topLevelLayout(raw: Uint8Array): TopLevelLayout | undefined {
  let at = skipWhitespace(raw, 0);
  if (raw[at] !== openBrace) return undefined;
  at = skipWhitespace(raw, at + 1);
  const members: TopLevelMember[] = [];
  let close: number | undefined;
  if (raw[at] === closeBrace) close = at;
  while (close === undefined) {
    if (raw[at] !== quote) return undefined;
    const keyEnd = stringEnd(raw, at);
    const key = keyEnd < 0 ? undefined : keyAt(raw, at, keyEnd);
    if (key === undefined) return undefined;
    const start = at;
    at = skipWhitespace(raw, keyEnd);
    if (raw[at] !== colon) return undefined;
    const valueStart = skipWhitespace(raw, at + 1);
    const end = valueEnd(raw, valueStart);
    if (end < 0) return undefined;
    members.push({ key, start, valueStart, valueEnd: end });
    at = skipWhitespace(raw, end);
    if (raw[at] === closeBrace) close = at;
    else if (raw[at] !== comma) return undefined;
    else at = skipWhitespace(raw, at + 1);
  }
  return skipWhitespace(raw, close + 1) === raw.length ? { members, close } : undefined;
}

/**
 * Whether a layout received beside `raw` can be edited with: offsets in order and in bounds, each member starting
 * at a quote, the closing brace where it says, and each member named in `keys` (those an edit touches) carrying
 * that name in its bytes. Cheap (no pass over the values): it guards against a layout of other bytes, not against
 * a layout forged to mislead.
 */
export function layoutFits(raw: Uint8Array, layout: TopLevelLayout, keys: ReadonlySet<string>): boolean {
  const { members, close } = layout;
  if (!Number.isInteger(close) || close >= raw.length || raw[close] !== closeBrace) return false;
  let previousEnd = 0;
  for (const member of members) {
    const { start, valueStart, valueEnd: end } = member;
    if (!(previousEnd < start && start < valueStart && valueStart < end && end <= close)) return false;
    if (raw[start] !== quote) return false;
    if (keys.has(member.key)) {
      const keyEnd = stringEnd(raw, start);
      if (keyEnd < 0 || keyEnd > valueStart || keyAt(raw, start, keyEnd) !== member.key) return false;
    }
    previousEnd = end;
  }
  return true;
}

/** What to change: members to set (the value as JSON text, replacing every member of that key) and to remove. */
export interface TopLevelEdit {
  set?: Record<string, string>;
  remove?: readonly string[];
}

/** Bytes `from`..`to` of the original give way to `text`. */
interface Patch {
  from: number;
  to: number;
  text: string;
}

/** Where a removed member's bytes go from and to: with the comma after it, or for the last one the comma before. */
function cutOf(members: TopLevelMember[], index: number, removed: (member: TopLevelMember) => boolean): Patch {
  const member = members[index]!;
  const next = members[index + 1];
  if (next !== undefined) return { from: member.start, to: next.start, text: '' };
  const lastKept = members.slice(0, index).findLast((candidate) => !removed(candidate));
  return { from: lastKept ? lastKept.valueEnd : member.start, to: member.valueEnd, text: '' };
}

/**
 * The object with its top-level members edited: a member set replaces the value of each member of that key (a
 * duplicated key keeps its places) or is appended when there is none; a removed key goes with its comma. Every
 * other byte is kept. `layout`: where the members are, as `topLevelLayout` found them (ingress sends it); absent,
 * they are found here. Undefined when `raw` is not one JSON object.
 */
export function editTopLevel(raw: Uint8Array, edit: TopLevelEdit, layout?: TopLevelLayout): Buffer | undefined {
  const parsed = layout ?? topLevelLayout(raw);
  if (parsed === undefined) return undefined;
  const { members, close } = parsed;
  const set = edit.set ?? {};
  const remove = new Set(edit.remove ?? []);
  const removed = (member: TopLevelMember) => remove.has(member.key);
  const patches: Patch[] = [];
  members.forEach((member, index) => {
    if (removed(member)) patches.push(cutOf(members, index, removed));
    else if (set[member.key] !== undefined)
      patches.push({ from: member.valueStart, to: member.valueEnd, text: set[member.key]! });
  });
  const present = new Set(members.map((member) => member.key));
  const appended = Object.entries(set)
    .filter(([key]) => !present.has(key) && !remove.has(key))
    .map(([key, value]) => `${JSON.stringify(key)}:${value}`);
  if (appended.length > 0) {
    const anyKept = members.some((member) => !removed(member));
    patches.push({ from: close, to: close, text: `${anyKept ? ',' : ''}${appended.join(',')}` });
  }
  patches.sort((a, b) => a.from - b.from || a.to - b.to);
  const pieces: Uint8Array[] = [];
  let copiedTo = 0;
  for (const patch of patches) {
    // Cuts of neighbouring removed members overlap; each byte goes once.
    if (patch.from > copiedTo) pieces.push(raw.subarray(copiedTo, patch.from));
    if (patch.text !== '') pieces.push(Buffer.from(patch.text, 'utf8'));
    copiedTo = Math.max(copiedTo, patch.to);
  }
  pieces.push(raw.subarray(copiedTo));
  return Buffer.concat(pieces);
}

/** The bytes of a top-level member's value (the last one of that key, as `JSON.parse` reads it), if present. */
export function topLevelValue(raw: Uint8Array, key: string): Uint8Array | undefined {
  const member = topLevelLayout(raw)?.members.findLast((candidate) => candidate.key === key);
  return member && raw.subarray(member.valueStart, member.valueEnd);
}
