import { VerifiedKeyCache } from '../src/key-cache';
import type { VerifiedKey } from '../src/keys';

const entry = (keyId: string, accountId: string) => ({ key: { id: keyId }, account: { id: accountId } }) as VerifiedKey;

describe('VerifiedKeyCache', () => {
  it('caches nothing until the revocation channel is connected', () => {
    const cache = new VerifiedKeyCache(5_000);
    cache.set('h1', entry('key_a', 'acct_1'));
    expect(cache.get('h1')).toBeUndefined();
    cache.setEnabled(true);
    cache.set('h1', entry('key_a', 'acct_1'));
    expect(cache.get('h1')?.key.id).toBe('key_a');
  });

  it('lets an entry live no longer than its ttl', () => {
    let now = 0;
    const cache = new VerifiedKeyCache(5_000, () => now);
    cache.setEnabled(true);
    cache.set('h1', entry('key_a', 'acct_1'));
    now = 4_999;
    expect(cache.get('h1')).toBeDefined();
    now = 5_000;
    expect(cache.get('h1')).toBeUndefined();
  });

  it('drops by key, by account, and everything when the channel reconnects', () => {
    const cache = new VerifiedKeyCache(5_000);
    cache.setEnabled(true);
    cache.set('h1', entry('key_a', 'acct_1'));
    cache.set('h2', entry('key_b', 'acct_1'));
    cache.set('h3', entry('key_c', 'acct_2'));
    cache.dropKey('key_a');
    expect(cache.get('h1')).toBeUndefined();
    cache.dropAccount('acct_1');
    expect(cache.get('h2')).toBeUndefined();
    expect(cache.get('h3')).toBeDefined();
    cache.setEnabled(true);
    expect(cache.get('h3')).toBeUndefined();
  });
});
