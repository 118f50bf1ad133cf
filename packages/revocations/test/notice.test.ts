import fc from 'fast-check';
import { decodeNotice, encodeNotice, publishNotice, revocationChannel } from '../src/notice';
import type { RevocationNotice } from '../src/notice';

describe('a revocation notice on the wire', () => {
  it('is the snake_case JSON every replica reads', () => {
    expect(encodeNotice({ keyId: 'key_1' })).toBe('{"key_id":"key_1"}');
    expect(encodeNotice({ accountId: 'acct_1' })).toBe('{"account_id":"acct_1"}');
  });

  it('decodes to what was encoded, for any id', () => {
    const notice = fc.oneof(
      fc.string().map((keyId): RevocationNotice => ({ keyId })),
      fc.string().map((accountId): RevocationNotice => ({ accountId })),
    );
    fc.assert(fc.property(notice, (sent) => expect(decodeNotice(encodeNotice(sent))).toEqual(sent)));
  });

  it('prefers the key when a message names both', () => {
    expect(decodeNotice('{"key_id":"key_1","account_id":"acct_1"}')).toEqual({ keyId: 'key_1' });
  });

  it.each([
    ['not JSON', 'key_1'],
    ['JSON that is not an object', '"key_1"'],
    ['null', 'null'],
    ['a number id', '{"key_id":1}'],
    ['the camelCase form', '{"keyId":"key_1"}'],
    ['an empty object', '{}'],
  ])('ignores %s', (_, message) => {
    expect(decodeNotice(message)).toBeUndefined();
  });

  it('is published on the one channel', async () => {
    const published: [string, string][] = [];
    const redis = { publish: async (channel: string, message: string) => published.push([channel, message]) };
    await publishNotice(redis, { keyId: 'key_9' });
    expect(published).toEqual([[revocationChannel, '{"key_id":"key_9"}']]);
  });
});
