import { isAddressAllowed, parseAllowedEntry, sourceAddress } from '../src';

describe('isAddressAllowed', () => {
  it('matches IPv4 and IPv6 addresses and ranges', () => {
    expect(isAddressAllowed('10.1.2.3', ['10.0.0.0/8'])).toBe(true);
    expect(isAddressAllowed('11.1.2.3', ['10.0.0.0/8'])).toBe(false);
    expect(isAddressAllowed('2001:db8::1', ['2001:db8::/32'])).toBe(true);
    expect(isAddressAllowed('2001:db9::1', ['2001:db8::/32'])).toBe(false);
    expect(isAddressAllowed('192.0.2.7', ['192.0.2.7'])).toBe(true);
    expect(isAddressAllowed('2001:db8::7', ['2001:db8:0:0::7'])).toBe(true);
  });

  it('treats IPv4-mapped IPv6 as the IPv4 address, both ways', () => {
    expect(isAddressAllowed('::ffff:10.1.2.3', ['10.0.0.0/8'])).toBe(true);
    expect(isAddressAllowed('10.1.2.3', ['::ffff:10.0.0.0/104'])).toBe(true);
    expect(isAddressAllowed('10.1.2.3', ['::ffff:10.1.2.3'])).toBe(true);
    expect(isAddressAllowed('::ffff:11.1.2.3', ['10.0.0.0/8'])).toBe(false);
  });

  it('refuses an unparsable source and skips unparsable entries', () => {
    expect(isAddressAllowed('not-an-address', ['0.0.0.0/0'])).toBe(false);
    expect(isAddressAllowed('10.0.0.1', ['garbage', '10.0.0.1'])).toBe(true);
    expect(parseAllowedEntry('10.0.0.0/33')).toBeUndefined();
  });
});

describe('sourceAddress', () => {
  const proxies = ['10.0.0.0/8'];

  it('is the peer when the peer is not a trusted proxy, whatever the header says', () => {
    expect(sourceAddress('203.0.113.9', '198.51.100.1', proxies)).toBe('203.0.113.9');
    expect(sourceAddress('203.0.113.9', '198.51.100.1', [])).toBe('203.0.113.9');
  });

  it('is the right-most untrusted hop behind trusted proxies', () => {
    expect(sourceAddress('10.0.0.2', '198.51.100.1', proxies)).toBe('198.51.100.1');
    expect(sourceAddress('10.0.0.2', 'spoofed, 198.51.100.1, 10.0.0.7', proxies)).toBe('198.51.100.1');
    expect(sourceAddress('::ffff:10.0.0.2', '2001:db8::1', proxies)).toBe('2001:db8::1');
  });

  it('is the peer when a trusted proxy sent no header', () => {
    expect(sourceAddress('10.0.0.2', undefined, proxies)).toBe('10.0.0.2');
  });
});
