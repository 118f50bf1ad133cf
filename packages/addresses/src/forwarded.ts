import { isAddressAllowed } from './allow-list';

/**
 * The caller's address: the TCP peer, unless the peer is a trusted proxy; then the right-most address
 * in X-Forwarded-For that is not itself a trusted proxy. A header sent by an untrusted peer changes
 * nothing, so a client cannot choose its own address.
 */
export function sourceAddress(
  peer: string,
  forwardedFor: string | undefined,
  trustedProxies: readonly string[],
): string {
  if (trustedProxies.length === 0 || forwardedFor === undefined || !isAddressAllowed(peer, trustedProxies)) return peer;
  const hops = forwardedFor
    .split(',')
    .map((hop) => hop.trim())
    .filter((hop) => hop.length > 0);
  for (let index = hops.length - 1; index >= 0; index -= 1) {
    const hop = hops[index]!;
    if (!isAddressAllowed(hop, trustedProxies)) return hop;
  }
  // Every hop is a trusted proxy: the left-most is the furthest one seen.
  return hops[0] ?? peer;
}
