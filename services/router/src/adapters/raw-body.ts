import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { AdapterCall } from './types';

/**
 * Edits the top level of a JSON object's bytes without parsing its values: members named in `drop`
 * are left out, `add` members (name and JSON text) are appended. Every value kept is copied byte for
 * byte, so numbers beyond 2^53 and any field the gateway does not know reach the upstream as the
 * caller wrote them. A failure when the bytes are not one JSON object.
 */
export function rewriteTopLevel(
  body: Uint8Array,
  drop: readonly string[],
  add: readonly (readonly [string, string])[],
): Result<Buffer> {
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const members = topLevelMembers(bytes);
  if (members === undefined)
    return err(gatewayError('invalid_request_error', 'The request body must be a JSON object.'));
  const parts: Buffer[] = [Buffer.from('{')];
  let first = true;
  for (const member of members) {
    if (drop.includes(member.name)) continue;
    if (!first) parts.push(Buffer.from(','));
    parts.push(bytes.subarray(member.start, member.end));
    first = false;
  }
  for (const [name, json] of add) {
    parts.push(Buffer.from(`${first ? '' : ','}${JSON.stringify(name)}:${json}`));
    first = false;
  }
  parts.push(Buffer.from('}'));
  return ok(Buffer.concat(parts));
}

interface Member {
  name: string;
  /** Byte offsets of `"name": value`, without the separating commas. */
  start: number;
  end: number;
}

const quote = 0x22;
const backslash = 0x5c;
const isSpace = (byte: number | undefined) => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;

/** The end (exclusive) of the string starting at `at` (a quote), or -1. */
function stringEnd(bytes: Buffer, at: number): number {
  let index = at + 1;
  while (index < bytes.length) {
    const next = bytes.indexOf(quote, index);
    if (next < 0) return -1;
    // An escaped quote has an odd number of backslashes before it.
    let slashes = 0;
    while (bytes[next - 1 - slashes] === backslash) slashes += 1;
    if (slashes % 2 === 0) return next + 1;
    index = next + 1;
  }
  return -1;
}

/** The end (exclusive) of the value starting at `at`: a string, a nested object or array, or a literal. */
function valueEnd(bytes: Buffer, at: number): number {
  const first = bytes[at];
  if (first === quote) return stringEnd(bytes, at);
  if (first === 0x7b || first === 0x5b) {
    let depth = 0;
    let index = at;
    while (index < bytes.length) {
      const byte = bytes[index];
      if (byte === quote) {
        index = stringEnd(bytes, index);
        if (index < 0) return -1;
        continue;
      }
      if (byte === 0x7b || byte === 0x5b) depth += 1;
      else if (byte === 0x7d || byte === 0x5d) {
        depth -= 1;
        if (depth === 0) return index + 1;
      }
      index += 1;
    }
    return -1;
  }
  let index = at;
  while (index < bytes.length && bytes[index] !== 0x2c && bytes[index] !== 0x7d && !isSpace(bytes[index])) index += 1;
  return index > at ? index : -1;
}

/** The members of the top-level object, or undefined when the bytes are not one object. */
function topLevelMembers(bytes: Buffer): Member[] | undefined {
  let index = 0;
  const skipSpace = () => {
    while (isSpace(bytes[index])) index += 1;
  };
  skipSpace();
  if (bytes[index] !== 0x7b) return undefined;
  index += 1;
  skipSpace();
  const members: Member[] = [];
  if (bytes[index] === 0x7d) return trailingOnly(bytes, index + 1) ? members : undefined;
  for (;;) {
    skipSpace();
    if (bytes[index] !== quote) return undefined;
    const start = index;
    const nameEnd = stringEnd(bytes, index);
    if (nameEnd < 0) return undefined;
    let name: string;
    try {
      name = JSON.parse(bytes.toString('utf8', start, nameEnd)) as string;
    } catch {
      return undefined;
    }
    index = nameEnd;
    skipSpace();
    if (bytes[index] !== 0x3a) return undefined;
    index += 1;
    skipSpace();
    const end = valueEnd(bytes, index);
    if (end < 0) return undefined;
    members.push({ name, start, end });
    index = end;
    skipSpace();
    if (bytes[index] === 0x2c) {
      index += 1;
      continue;
    }
    if (bytes[index] === 0x7d) return trailingOnly(bytes, index + 1) ? members : undefined;
    return undefined;
  }
}

function trailingOnly(bytes: Buffer, from: number): boolean {
  for (let index = from; index < bytes.length; index += 1) if (!isSpace(bytes[index])) return false;
  return true;
}

/** Top-level members the provider body must not carry as the caller sent them. */
const replacedMembers = ['model', 'stream', 'anthropic_version', 'anthropic_beta'];

/**
 * The caller's body without `model` and `stream`, with the provider's members: edited at its top level
 * (`rewriteTopLevel`), every value kept byte for byte. The router has already read the body as a JSON
 * object, so the edit cannot fail; if it ever did, the parsed body is written out instead.
 */
export function providerBody(call: Pick<AdapterCall, 'rawBody' | 'body'>, add: readonly [string, string][]): string {
  const edited = call.rawBody && rewriteTopLevel(call.rawBody, replacedMembers, add);
  if (edited?.ok) return edited.value.toString('utf8');
  const rest = Object.fromEntries(Object.entries(call.body).filter(([name]) => !replacedMembers.includes(name)));
  for (const [name, json] of add) rest[name] = JSON.parse(json) as unknown;
  return JSON.stringify(rest);
}
