import ipaddr from 'ipaddr.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** An IPv4-mapped IPv6 range (::ffff:a.b.c.d/n, n ≥ 96) is the IPv4 range it maps. */
function normaliseRange([address, prefix]: Range): Range {
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && prefix >= 96) {
    return [(address as ipaddr.IPv6).toIPv4Address(), prefix - 96];
  }
  return [address, prefix];
}

export function parseAllowedEntry(entry: string): Range | undefined {
  try {
    if (entry.includes('/')) return normaliseRange(ipaddr.parseCIDR(entry));
    const address = ipaddr.process(entry);
    return [address, address.kind() === 'ipv4' ? 32 : 128];
  } catch {
    return undefined;
  }
}

/** Whether a source address falls in any allowed entry; mapped and plain IPv4 forms are the same address. */
export function isAddressAllowed(source: string, allowed: readonly string[]): boolean {
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.process(source);
  } catch {
    return false;
  }
  return allowed.some((entry) => {
    const range = parseAllowedEntry(entry);
    return range !== undefined && range[0].kind() === address.kind() && address.match(range);
  });
}
