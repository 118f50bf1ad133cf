import { randomBase62 } from '@gw/ids';
import { hashKey, KeyFormat } from '../src/key-format';
import { isAddressAllowed } from '../src/source-address';

describe('KeyFormat', () => {
  const format = new KeyFormat('gw');

  it('issues gw_live_/gw_test_ keys with 32 base62 characters and a short display prefix', () => {
    for (const environment of ['live', 'test'] as const) {
      const { key, displayPrefix } = format.issue(environment);
      expect(key).toMatch(new RegExp(`^gw_${environment}_[A-Za-z0-9]{32}$`));
      expect(displayPrefix).toBe(key.slice(0, `gw_${environment}_`.length + 4));
      expect(format.environmentOf(key)).toBe(environment);
    }
  });

  it('does not recognise malformed keys', () => {
    for (const bad of [
      '',
      'gw_live_short',
      `gw_prod_${'a'.repeat(32)}`,
      `xx_live_${'a'.repeat(32)}`,
      `gw_live_${'a'.repeat(31)}!`,
    ]) {
      expect(format.environmentOf(bad)).toBeUndefined();
    }
  });

  it('hashes under a pepper, differently for each pepper', () => {
    const key = format.issue('live').key;
    expect(hashKey(key, { id: 'p1', secret: 's'.repeat(16) })).not.toEqual(
      hashKey(key, { id: 'p2', secret: 't'.repeat(16) }),
    );
    expect(hashKey(key, { id: 'p1', secret: 's'.repeat(16) })).toEqual(
      hashKey(key, { id: 'p1', secret: 's'.repeat(16) }),
    );
  });

  it('draws every base62 character', () => {
    expect(new Set(randomBase62(10_000)).size).toBe(62);
  });
});

describe('isAddressAllowed', () => {
  it('matches IPv4 and IPv6 addresses and ranges', () => {
    expect(isAddressAllowed('10.1.2.3', ['10.0.0.0/8'])).toBe(true);
    expect(isAddressAllowed('11.1.2.3', ['10.0.0.0/8'])).toBe(false);
    expect(isAddressAllowed('2001:db8::1', ['2001:db8::/32'])).toBe(true);
    expect(isAddressAllowed('2001:db9::1', ['2001:db8::/32'])).toBe(false);
    expect(isAddressAllowed('192.0.2.7', ['192.0.2.7'])).toBe(true);
  });

  it('treats IPv4-mapped IPv6 as the IPv4 address, both ways', () => {
    expect(isAddressAllowed('::ffff:10.1.2.3', ['10.0.0.0/8'])).toBe(true);
    expect(isAddressAllowed('10.1.2.3', ['::ffff:10.0.0.0/104'])).toBe(true);
    expect(isAddressAllowed('::ffff:11.1.2.3', ['10.0.0.0/8'])).toBe(false);
  });

  it('refuses an unparsable source', () => {
    expect(isAddressAllowed('not-an-address', ['0.0.0.0/0'])).toBe(false);
  });
});
