import { AllowList, findInvalidEntry, isAddressAllowed, parseAllowListEntry, sourceAddress } from '../src';

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
    expect(parseAllowListEntry('10.0.0.0/33')).toEqual({ ok: false, reason: 'has a prefix length outside 0-32' });
  });

  it('reads a source address only in canonical notation', () => {
    expect(isAddressAllowed('010.0.0.1', ['8.0.0.0/8', '10.0.0.0/8'])).toBe(false);
    expect(isAddressAllowed('127.1', ['127.0.0.0/8'])).toBe(false);
    expect(isAddressAllowed('2130706433', ['0.0.0.0/0'])).toBe(false);
    expect(isAddressAllowed('fe80::1%eth0', ['fe80::/10'])).toBe(false);
  });
});

describe('parseAllowListEntry', () => {
  it.each([
    '10.0.0.1',
    '0.0.0.0/0',
    '255.255.255.255/32',
    '192.168.0.0/16',
    '10.0.0.0/8',
    '::',
    '::/0',
    '::1',
    '2001:db8::/32',
    '2001:DB8:0:0:0:0:0:7',
    '1:2:3:4:5:6:7::',
    '::ffff:10.0.0.0/104',
    '64:ff9b::192.0.2.33',
    '1:2:3:4:5:6:1.2.3.4',
  ])('accepts %s', (entry) => {
    expect(parseAllowListEntry(entry).ok).toBe(true);
  });

  it.each([
    ['010.0.0.1', 'leading zero (octal elsewhere)'],
    ['10.0.0.01', 'leading zero'],
    ['0xa.0.0.1', 'hexadecimal part'],
    ['127.1', 'two parts'],
    ['10.1.1', 'three parts'],
    ['2130706433', 'one 32-bit number'],
    ['256.0.0.1', 'part over 255'],
    [' 10.0.0.1', 'surrounding space'],
    ['10.0.0.1/', 'empty prefix'],
    ['10.0.0.0/08', 'prefix with a leading zero'],
    ['10.0.0.0/+8', 'signed prefix'],
    ['10.0.0.0/33', 'IPv4 prefix over 32'],
    ['::/129', 'IPv6 prefix over 128'],
    ['1::2::3', 'two ::'],
    ['1:2:3:4:5:6:7:8:9', 'nine groups'],
    ['1:2:3:4:5:6:7', 'seven groups without ::'],
    ['12345::', 'a group of five digits'],
    [':1:2:3:4:5:6:7', 'a lone leading colon'],
    ['::ffff:010.0.0.1', 'an embedded quad with a leading zero'],
    ['::1.2.3', 'an embedded quad of three parts'],
    ['1.2.3.4::', 'an embedded quad not at the end'],
    ['fe80::1%eth0', 'a zone'],
    ['fe80::%1/64', 'a numeric zone'],
    ['', 'nothing'],
  ])('refuses %s (%s)', (entry) => {
    expect(parseAllowListEntry(entry).ok).toBe(false);
  });

  it('refuses a range with bits set past its prefix, naming the range meant', () => {
    expect(parseAllowListEntry('10.0.0.1/8')).toEqual({
      ok: false,
      reason: 'has bits set past its /8 prefix; the range is written 10.0.0.0/8',
    });
    expect(parseAllowListEntry('10.0.0.128/25').ok).toBe(true);
    expect(parseAllowListEntry('10.0.0.128/24').ok).toBe(false);
    expect(parseAllowListEntry('2001:db8::1/64')).toEqual({
      ok: false,
      reason: 'has bits set past its /64 prefix; the range is written 2001:db8::/64',
    });
  });

  it('says a zone is not usable', () => {
    expect(parseAllowListEntry('fe80::1%eth0')).toEqual({
      ok: false,
      reason: 'carries a zone (%…), which an allow-list cannot use',
    });
  });
});

describe('findInvalidEntry', () => {
  it('names the first entry that is not a canonical address or range, by index', () => {
    expect(findInvalidEntry(['10.0.0.0/8', '::1'])).toBeUndefined();
    expect(findInvalidEntry(['10.0.0.0/8', '010.0.0.1', '127.1'])).toEqual({
      index: 1,
      reason: expect.stringMatching(/^is not an IPv4 address/),
    });
  });
});

describe('AllowList', () => {
  it('admits nothing through an entry it cannot read, and lists those entries', () => {
    // 010.0.0.1 once admitted 8.0.0.1 (octal); stored lists may still hold such entries.
    const list = new AllowList(['010.0.0.1', '10.0.0.1/8', 'fe80::1%eth0', '192.0.2.7']);
    expect(list.invalidEntries.map((entry) => entry.index)).toEqual([0, 1, 2]);
    expect(list.admits('8.0.0.1')).toBe(false);
    expect(list.admits('10.0.0.1')).toBe(false);
    expect(list.admits('10.0.0.2')).toBe(false);
    expect(list.admits('fe80::1')).toBe(false);
    expect(list.admits('192.0.2.7')).toBe(true);
    expect(list.admits('::ffff:192.0.2.7')).toBe(true);
  });

  it('does not read the IPv4-compatible form ::a.b.c.d as the IPv4 address', () => {
    expect(new AllowList(['1.2.3.4']).admits('::1.2.3.4')).toBe(false);
    expect(new AllowList(['::1.2.3.4']).admits('1.2.3.4')).toBe(false);
    expect(new AllowList(['::1.2.3.4']).admits('::102:304')).toBe(true);
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
