import { randomBase62 } from '@gw/ids';
import { hashKey, KeyFormat } from '../src/key-format';

describe('KeyFormat', () => {
  const format = new KeyFormat('gw');

  it('issues gw_live_/gw_test_ keys with 32 base62 characters and a short display prefix', () => {
    for (const environment of ['live', 'test'] as const) {
      const { key, displayPrefix } = format.issue(environment);
      expect(key).toMatch(new RegExp(`^gw_${environment}_[A-Za-z0-9]{32}$`));
      expect(displayPrefix).toBe(key.slice(0, `gw_${environment}_`.length + 4));
      expect(format.kindOf(key)).toBe(environment);
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
      expect(format.kindOf(bad)).toBeUndefined();
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
