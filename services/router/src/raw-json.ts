/**
 * Edits of a JSON object's top-level members on its bytes, without parsing and serialising it again: a
 * request passes through the router unchanged in every value the gateway does not set (integers beyond
 * 2^53, `1.0`, escapes and key order included), which a `JSON.parse` / `JSON.stringify` round trip would
 * not keep. The input is JSON that ingress has already parsed; anything else is refused (undefined).
 */

/** One top-level member: its key (unescaped) and where its value's bytes start and end (exclusive). */
interface Member {
  key: string;
  /** Where the member begins (its key's opening quote). */
  start: number;
  valueStart: number;
  valueEnd: number;
}

const quote = 0x22;
const backslash = 0x5c;

function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function skipWhitespace(raw: Uint8Array, index: number): number {
  while (index < raw.length && isWhitespace(raw[index]!)) index += 1;
  return index;
}

/** The index just past the string that starts at `index` (its opening quote); -1 when it never closes. */
function stringEnd(raw: Uint8Array, index: number): number {
  for (let at = index + 1; at < raw.length; at += 1) {
    const byte = raw[at]!;
    if (byte === backslash) at += 1;
    else if (byte === quote) return at + 1;
  }
  return -1;
}

/** The index just past the value that starts at `index`; -1 when the bytes end first. */
function valueEnd(raw: Uint8Array, index: number): number {
  const first = raw[index];
  if (first === quote) return stringEnd(raw, index);
  if (first === 0x7b || first === 0x5b) {
    let depth = 0;
    for (let at = index; at < raw.length; at += 1) {
      const byte = raw[at]!;
      if (byte === quote) {
        at = stringEnd(raw, at) - 1;
        if (at < 0) return -1;
      } else if (byte === 0x7b || byte === 0x5b) depth += 1;
      else if (byte === 0x7d || byte === 0x5d) {
        depth -= 1;
        if (depth === 0) return at + 1;
      }
    }
    return -1;
  }
  // A number, true, false or null: up to the next separator.
  let at = index;
  while (at < raw.length && !isWhitespace(raw[at]!) && raw[at] !== 0x2c && raw[at] !== 0x7d) at += 1;
  return at > index ? at : -1;
}

/** The members of the object whose bytes span `raw`, and where its closing brace is. */
function membersOf(raw: Uint8Array): { members: Member[]; close: number } | undefined {
  let at = skipWhitespace(raw, 0);
  if (raw[at] !== 0x7b) return undefined;
  at = skipWhitespace(raw, at + 1);
  const members: Member[] = [];
  if (raw[at] === 0x7d) return { members, close: at };
  for (;;) {
    if (raw[at] !== quote) return undefined;
    const keyEnd = stringEnd(raw, at);
    if (keyEnd < 0) return undefined;
    let key: unknown;
    try {
      key = JSON.parse(Buffer.from(raw.buffer, raw.byteOffset + at, keyEnd - at).toString('utf8'));
    } catch {
      return undefined;
    }
    const start = at;
    at = skipWhitespace(raw, keyEnd);
    if (raw[at] !== 0x3a) return undefined;
    const valueStart = skipWhitespace(raw, at + 1);
    const end = valueEnd(raw, valueStart);
    if (end < 0) return undefined;
    members.push({ key: key as string, start, valueStart, valueEnd: end });
    at = skipWhitespace(raw, end);
    if (raw[at] === 0x7d) return { members, close: at };
    if (raw[at] !== 0x2c) return undefined;
    at = skipWhitespace(raw, at + 1);
  }
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
function cutOf(members: Member[], index: number, removed: (member: Member) => boolean): Patch {
  const member = members[index]!;
  const next = members[index + 1];
  if (next !== undefined) return { from: member.start, to: next.start, text: '' };
  const lastKept = members.slice(0, index).findLast((candidate) => !removed(candidate));
  return { from: lastKept ? lastKept.valueEnd : member.start, to: member.valueEnd, text: '' };
}

/**
 * The object with its top-level members edited: a member set replaces the value of each member of that key (a
 * duplicated key keeps its places) or is appended when there is none; a removed key goes with its comma. Every
 * other byte is kept. Undefined when `raw` is not one JSON object.
 */
export function editTopLevel(raw: Uint8Array, edit: TopLevelEdit): Buffer | undefined {
  const parsed = membersOf(raw);
  if (parsed === undefined || skipWhitespace(raw, parsed.close + 1) !== raw.length) return undefined;
  const { members, close } = parsed;
  const set = edit.set ?? {};
  const remove = new Set(edit.remove ?? []);
  const removed = (member: Member) => remove.has(member.key);
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
  const member = membersOf(raw)?.members.findLast((candidate) => candidate.key === key);
  return member && raw.subarray(member.valueStart, member.valueEnd);
}
