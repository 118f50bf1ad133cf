import { createAccountBody, createAdminKeyBody, createKeyBody } from '@gw/admin-api';
import { parseBody } from '../src/admin/input';

const refusal = (message: unknown) => ({ ok: false, error: { type: 'invalid_request_error', message } });

describe('admin request bodies', () => {
  const key = {
    account_id: 'acct_1',
    name: 'ci',
    environment: 'live',
    residency: 'eu',
    privacy_mode: 'off',
  };

  it('trims names and accepts up to 200 characters', () => {
    expect(parseBody(createAccountBody, { name: '  Acme ', plan: 'pro' })).toEqual({
      ok: true,
      value: { name: 'Acme', plan: 'pro' },
    });
    expect(parseBody(createAdminKeyBody, { name: ` ${'😀'.repeat(200)} ` }).ok).toBe(true);
  });

  it('refuses names that are empty, longer than 200 characters or hold control characters', () => {
    expect(parseBody(createAccountBody, { name: ' ', plan: 'pro' })).toEqual(
      refusal('name: expected a non-empty string.'),
    );
    expect(parseBody(createAccountBody, { name: 'a'.repeat(300_000), plan: 'pro' })).toEqual(
      refusal('name: expected at most 200 characters.'),
    );
    for (const name of ['a\u0000b', 'a\u001b[31mb', 'a\u009bb', 'a\rb']) {
      expect(parseBody(createKeyBody, { ...key, name })).toEqual(refusal('name: must not contain control characters.'));
      expect(parseBody(createAdminKeyBody, { name })).toEqual(refusal('name: must not contain control characters.'));
    }
  });

  it('refuses more than 1,000 allowed models and ids over 256 characters, by index', () => {
    expect(parseBody(createKeyBody, { ...key, allowed_models: new Array<string>(1001).fill('m') })).toEqual(
      refusal('allowed_models: expected at most 1000 models.'),
    );
    expect(parseBody(createKeyBody, { ...key, allowed_models: ['m', 'm'.repeat(257)] })).toEqual(
      refusal('allowed_models.1: expected a model id of 1 to 256 characters.'),
    );
    expect(parseBody(createKeyBody, { ...key, allowed_models: ['m'.repeat(256)] }).ok).toBe(true);
  });

  it.each([
    ['010.0.0.1', 'is not an IPv4 address'],
    ['0xa.0.0.1', 'is not an IPv4 address'],
    ['127.1', 'is not an IPv4 address'],
    ['2130706433', 'is not an IPv4 address'],
    ['10.0.0.1/8', 'has bits set past its /8 prefix; the range is written 10.0.0.0/8.'],
    ['fe80::1%eth0', 'carries a zone'],
  ])('refuses the allow-list entry %s, naming it and its index', (entry, reason) => {
    const parsed = parseBody(createKeyBody, { ...key, allowed_ips: ['10.0.0.0/8', '2001:db8::/32', entry] });
    expect(parsed).toEqual(refusal(expect.stringContaining(`allowed_ips.2: ${JSON.stringify(entry)} ${reason}`)));
  });

  it('accepts canonical entries, and at most 1,000 of them', () => {
    expect(parseBody(createKeyBody, { ...key, allowed_ips: ['10.0.0.0/8', '::ffff:10.0.0.0/104', '::1'] }).ok).toBe(
      true,
    );
    expect(parseBody(createKeyBody, { ...key, allowed_ips: new Array<string>(1001).fill('10.0.0.1') })).toEqual(
      refusal('allowed_ips: expected at most 1000 entries.'),
    );
  });

  it('cuts a long entry in the message', () => {
    const parsed = parseBody(createKeyBody, { ...key, allowed_ips: ['9'.repeat(100_000)] });
    expect(!parsed.ok && parsed.error.message).toMatch(new RegExp(`^allowed_ips\\.0: "${'9'.repeat(64)}…" is not`));
  });

  it('refuses an expiry in the past, naming the field', () => {
    expect(parseBody(createKeyBody, { ...key, expires_at: '2020-01-01T00:00:00Z' })).toEqual(
      refusal('expires_at: expected a time in the future.'),
    );
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
    expect(parseBody(createKeyBody, { ...key, expires_at: inAnHour }).ok).toBe(true);
  });

  it('names unknown fields cut, at most three of them', () => {
    expect(parseBody(createAdminKeyBody, { name: 'ops', ['f'.repeat(1000)]: 1 })).toEqual(
      refusal(`unknown field "${'f'.repeat(64)}…".`),
    );
    expect(parseBody(createAdminKeyBody, { name: 'ops', a: 1, b: 2, c: 3, d: 4, e: 5 })).toEqual(
      refusal('unknown fields "a", "b", "c" and 2 more.'),
    );
  });

  it('refuses a body that is not an object', () => {
    expect(parseBody(createAdminKeyBody, [])).toEqual(refusal('The request body must be a JSON object.'));
  });
});
