import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { err, gatewayError, ok, quoted } from '@gw/errors';
import type { Result } from '@gw/errors';

/** Every address a name resolves to, as the system resolver gives them. */
export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

export const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

/** Where one delivery goes: the endpoint's name (for TLS) and the one address vetted for it. */
export interface VettedTarget {
  url: URL;
  hostname: string;
  port: number;
  address: string;
  family: 4 | 6;
}

const maxUrlLength = 2048;

/** An endpoint URL as the gateway accepts it: https, no credentials, no fragment, at most 2 KiB. */
export function parseEndpointUrl(text: string): Result<URL> {
  const refuse = (why: string) => err(gatewayError('invalid_request_error', `url: ${why}`));
  if (text.length > maxUrlLength) return refuse(`at most ${maxUrlLength} characters.`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return refuse(`${quoted(text)} is not a URL.`);
  }
  if (url.protocol !== 'https:') return refuse('expected an https:// URL.');
  if (url.username || url.password) return refuse('must not carry a user name or password.');
  if (url.hash) return refuse('must not carry a fragment.');
  return ok(url);
}

/**
 * Whether an address is one anybody on the internet could reach: ipaddr.js names every special-purpose
 * range (private, loopback, link-local, unique local, carrier-grade NAT, multicast, documentation,
 * 6to4, NAT64…); only the rest, `unicast`, is public. An IPv4-mapped IPv6 address is judged as its IPv4.
 */
export function isPublicAddress(text: string): boolean {
  let address = ipaddr.parse(text);
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) {
    address = (address as ipaddr.IPv6).toIPv4Address();
  }
  return address.range() === 'unicast';
}

const bracketless = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1');

export interface TargetPolicy {
  resolve: Resolver;
  /** host:port pairs allowed to resolve to non-public addresses. */
  allowedPrivateTargets: ReadonlySet<string>;
}

/**
 * Resolves an endpoint's name once and picks the address to connect to. Every address the name has must
 * be public, unless host:port is allow-listed: a name with one private address among public ones could
 * otherwise be steered to it. The caller connects to the returned address only, so the answer cannot
 * change between this check and the connection (DNS rebinding).
 */
export async function vetTarget(url: URL, policy: TargetPolicy): Promise<Result<VettedTarget>> {
  const hostname = bracketless(url.hostname).toLowerCase();
  const port = url.port === '' ? 443 : Number(url.port);
  let addresses: { address: string; family: number }[];
  if (isIP(hostname)) addresses = [{ address: hostname, family: isIP(hostname) }];
  else {
    try {
      addresses = await policy.resolve(hostname);
    } catch {
      return err(gatewayError('invalid_request_error', `url: the name ${quoted(hostname)} does not resolve.`));
    }
  }
  if (addresses.length === 0) {
    return err(gatewayError('invalid_request_error', `url: the name ${quoted(hostname)} does not resolve.`));
  }
  const allowListed = policy.allowedPrivateTargets.has(`${url.hostname.toLowerCase()}:${port}`);
  const usable = addresses.filter((entry) => isIP(entry.address) !== 0);
  if (
    !allowListed &&
    (usable.length !== addresses.length || !usable.every((entry) => isPublicAddress(entry.address)))
  ) {
    return err(
      gatewayError(
        'invalid_request_error',
        `url: ${quoted(hostname)} resolves to a private, loopback or link-local address; such endpoints are refused unless the operator allow-lists host:port.`,
      ),
    );
  }
  const chosen = usable[0]!;
  return ok({ url, hostname, port, address: chosen.address, family: chosen.family === 6 ? 6 : 4 });
}
