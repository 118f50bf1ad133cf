import ipaddr from 'ipaddr.js';

export type Address = ipaddr.IPv4 | ipaddr.IPv6;
export type AddressRange = [Address, number];

/** The most entries one allow-list may hold. */
export const maxAllowListEntries = 1000;

/** An entry that names no range, with why (the reason never repeats the entry). */
export interface InvalidEntry {
  index: number;
  reason: string;
}

const octet = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
/** Four decimal numbers 0–255 without leading zeros: the one IPv4 notation that means the same everywhere. */
const dottedQuad = new RegExp(`^${octet}(?:\\.${octet}){3}$`);
const hexGroup = /^[0-9A-Fa-f]{1,4}$/;
const prefixDigits = /^(?:0|[1-9][0-9]{0,2})$/;

const notAnAddress =
  'is not an IPv4 address (four decimal numbers 0-255 without leading zeros) or an IPv6 address, with an optional /prefix';

function parseDottedQuad(text: string): ipaddr.IPv4 | undefined {
  return dottedQuad.test(text) ? new ipaddr.IPv4(text.split('.').map(Number)) : undefined;
}

/** 16-bit groups of one side of `::`; a dotted quad may only end the address. */
function parseGroups(side: string, endsAddress: boolean): number[] | undefined {
  if (side === '') return [];
  const texts = side.split(':');
  const groups: number[] = [];
  for (const [position, text] of texts.entries()) {
    if (hexGroup.test(text)) {
      groups.push(parseInt(text, 16));
      continue;
    }
    const embedded = endsAddress && position === texts.length - 1 ? parseDottedQuad(text) : undefined;
    if (!embedded) return undefined;
    const [a, b, c, d] = embedded.octets as [number, number, number, number];
    groups.push((a << 8) | b, (c << 8) | d);
  }
  return groups;
}

/**
 * IPv6 in any of its standard text forms (full, `::`-compressed, a dotted quad in the last 32 bits),
 * parsed here rather than by ipaddr.js, whose parser also takes zones and legacy IPv4 parts.
 */
function parseIPv6(text: string): ipaddr.IPv6 | undefined {
  const sides = text.split('::');
  if (sides.length > 2) return undefined;
  const [head, tail] = sides as [string, string | undefined];
  const left = parseGroups(head, tail === undefined);
  const right = tail === undefined ? [] : parseGroups(tail, true);
  if (!left || !right) return undefined;
  const count = left.length + right.length;
  if (tail === undefined ? count !== 8 : count > 7) return undefined;
  return new ipaddr.IPv6([...left, ...new Array<number>(8 - count).fill(0), ...right]);
}

/** One address in a canonical notation only; anything ipaddr.js would read by a legacy rule is refused. */
export function parseAddress(text: string): Address | undefined {
  return parseDottedQuad(text) ?? (text.includes(':') ? parseIPv6(text) : undefined);
}

/** An IPv4-mapped IPv6 address or range (::ffff:a.b.c.d/n, n ≥ 96) is the IPv4 one it maps. */
function unmapped([address, prefix]: AddressRange): AddressRange {
  if (address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress() && prefix >= 96) {
    return [address.toIPv4Address(), prefix - 96];
  }
  return [address, prefix];
}

/** The address with every bit past the prefix cleared. */
function networkAddress(address: Address, prefix: number): Address {
  const bytes = address
    .toByteArray()
    .map((byte, index) => byte & ~(0xff >> Math.max(0, Math.min(8, prefix - index * 8))));
  return ipaddr.fromByteArray(bytes);
}

export type EntryParse = { ok: true; range: AddressRange } | { ok: false; reason: string };

/**
 * An allow-list entry: an address or a CIDR range whose address is the network's own (no bits set
 * past the prefix), so that what is written is exactly what is admitted.
 */
export function parseAllowListEntry(entry: string): EntryParse {
  if (entry.includes('%')) return { ok: false, reason: 'carries a zone (%…), which an allow-list cannot use' };
  const slash = entry.indexOf('/');
  const address = parseAddress(slash < 0 ? entry : entry.slice(0, slash));
  if (!address) return { ok: false, reason: notAnAddress };
  const bits = address.kind() === 'ipv4' ? 32 : 128;
  if (slash < 0) return { ok: true, range: unmapped([address, bits]) };
  const prefixText = entry.slice(slash + 1);
  const prefix = Number(prefixText);
  if (!prefixDigits.test(prefixText) || prefix > bits) {
    return { ok: false, reason: `has a prefix length outside 0-${bits}` };
  }
  const network = networkAddress(address, prefix);
  if (network.toString() !== address.toString()) {
    return { ok: false, reason: `has bits set past its /${prefix} prefix; the range is written ${network}/${prefix}` };
  }
  return { ok: true, range: unmapped([address, prefix]) };
}

/** The first entry that names no range, if any. */
export function findInvalidEntry(entries: readonly string[]): InvalidEntry | undefined {
  for (const [index, entry] of entries.entries()) {
    const parsed = parseAllowListEntry(entry);
    if (!parsed.ok) return { index, reason: parsed.reason };
  }
  return undefined;
}

/**
 * Allowed addresses and ranges, parsed once. An entry that names no range (one stored before the
 * notation rules) matches nothing: the list fails closed and says which entries it could not use.
 */
export class AllowList {
  readonly invalidEntries: readonly InvalidEntry[];
  private readonly ranges: readonly AddressRange[];

  constructor(entries: readonly string[]) {
    const ranges: AddressRange[] = [];
    const invalidEntries: InvalidEntry[] = [];
    for (const [index, entry] of entries.entries()) {
      const parsed = parseAllowListEntry(entry);
      if (parsed.ok) ranges.push(parsed.range);
      else invalidEntries.push({ index, reason: parsed.reason });
    }
    this.ranges = ranges;
    this.invalidEntries = invalidEntries;
  }

  /** Whether a source address falls in a range; mapped and plain IPv4 forms are the same address. */
  admits(source: string): boolean {
    const parsed = parseAddress(source);
    if (!parsed) return false;
    const [address] = unmapped([parsed, parsed.kind() === 'ipv4' ? 32 : 128]);
    return this.ranges.some((range) => range[0].kind() === address.kind() && address.match(range));
  }
}

export function isAddressAllowed(source: string, allowed: readonly string[]): boolean {
  return new AllowList(allowed).admits(source);
}
