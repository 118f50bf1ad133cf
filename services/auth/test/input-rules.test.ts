import { maxAllowedModels, maxModelIdChars, maxNameChars } from '@gw/vocabulary';
import { checkAllowedIps, checkAllowedModels, checkExpiry, checkName } from '../src/input-rules';

const refusal = (message: unknown) => ({ ok: false, error: { type: 'invalid_request_error', message } });

describe('checkName', () => {
  it('trims and accepts up to 200 characters', () => {
    expect(checkName('  Acme  ')).toEqual({ ok: true, value: 'Acme' });
    expect(checkName(` ${'n'.repeat(maxNameChars)} `).ok).toBe(true);
    expect(checkName('😀'.repeat(maxNameChars)).ok).toBe(true);
  });

  it('refuses an empty, long or control-character name', () => {
    expect(checkName(' \t ')).toEqual(refusal('name: expected a non-empty string.'));
    expect(checkName('n'.repeat(maxNameChars + 1))).toEqual(refusal('name: expected at most 200 characters.'));
    expect(checkName('a'.repeat(300_000))).toEqual(refusal('name: expected at most 200 characters.'));
    for (const name of ['a\u0000b', 'a\nb', 'a\u001b[31mb', 'a\u0085b']) {
      expect(checkName(name)).toEqual(refusal('name: must not contain control characters.'));
    }
  });
});

describe('checkAllowedModels', () => {
  it('refuses more than 1,000 models and ids over 256 characters, by index', () => {
    expect(checkAllowedModels(['claude-sonnet-5']).ok).toBe(true);
    expect(checkAllowedModels(new Array<string>(maxAllowedModels + 1).fill('m'))).toEqual(
      refusal('allowed_models: expected at most 1000 models.'),
    );
    expect(checkAllowedModels(['m', 'm'.repeat(maxModelIdChars + 1)])).toEqual(
      refusal('allowed_models.1: expected a model id of 1 to 256 characters.'),
    );
    expect(checkAllowedModels([''])).toEqual(refusal('allowed_models.0: expected a model id of 1 to 256 characters.'));
  });
});

describe('checkAllowedIps', () => {
  it('accepts canonical addresses and ranges', () => {
    expect(checkAllowedIps(['10.0.0.0/8', '192.0.2.7', '2001:db8::/32', '::1'])).toEqual({
      ok: true,
      value: undefined,
    });
  });

  it.each([
    ['010.0.0.1', /^allowed_ips\.1: "010\.0\.0\.1" is not an IPv4 address/],
    ['0xa.0.0.1', /^allowed_ips\.1: "0xa\.0\.0\.1" is not an IPv4 address/],
    ['127.1', /^allowed_ips\.1: "127\.1" is not/],
    ['2130706433', /^allowed_ips\.1: "2130706433" is not/],
    [
      '10.0.0.1/8',
      /^allowed_ips\.1: "10\.0\.0\.1\/8" has bits set past its \/8 prefix; the range is written 10\.0\.0\.0\/8\.$/,
    ],
    ['fe80::1%eth0', /^allowed_ips\.1: "fe80::1%eth0" carries a zone/],
  ])('refuses %s, naming the entry and its index', (entry, message) => {
    const checked = checkAllowedIps(['192.0.2.1', entry]);
    expect(checked).toEqual(refusal(expect.stringMatching(message)));
  });

  it('cuts a long entry in the message', () => {
    const checked = checkAllowedIps([`1${'0'.repeat(100_000)}`]);
    expect(!checked.ok && checked.error.message).toBe(
      `allowed_ips.0: "1${'0'.repeat(63)}…" is not an IPv4 address (four decimal numbers 0-255 without leading zeros) or an IPv6 address, with an optional /prefix.`,
    );
  });

  it('refuses more than 1,000 entries', () => {
    expect(checkAllowedIps(new Array<string>(1001).fill('192.0.2.1'))).toEqual(
      refusal('allowed_ips: expected at most 1000 entries.'),
    );
    expect(checkAllowedIps(new Array<string>(1000).fill('192.0.2.1')).ok).toBe(true);
  });
});

describe('checkExpiry', () => {
  const now = new Date('2026-06-01T12:00:00Z');

  it('accepts none or a future instant', () => {
    expect(checkExpiry(null, now).ok).toBe(true);
    expect(checkExpiry(new Date('2026-06-01T12:00:00.001Z'), now).ok).toBe(true);
  });

  it('refuses the past, now, and an invalid date, naming the field', () => {
    expect(checkExpiry(new Date('2026-06-01T11:59:59Z'), now)).toEqual(
      refusal('expires_at: expected a time in the future.'),
    );
    expect(checkExpiry(now, now)).toEqual(refusal('expires_at: expected a time in the future.'));
    expect(checkExpiry(new Date(Number.NaN), now)).toEqual(refusal('expires_at: expected an ISO 8601 timestamp.'));
  });
});
