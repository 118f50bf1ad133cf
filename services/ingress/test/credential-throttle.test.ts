import { CredentialThrottle, throttledUnit } from '../src/admin/credential-throttle';

describe('CredentialThrottle', () => {
  it('lets an address present the burst, then one bad credential per refill interval', () => {
    let now = 0;
    const throttle = new CredentialThrottle({ burst: 3, refillMs: 1_000, maxAddresses: 10 }, () => now);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      expect(throttle.waitMs('192.0.2.1')).toBe(0);
      throttle.refused('192.0.2.1');
    }
    expect(throttle.waitMs('192.0.2.1')).toBe(1_000);
    expect(throttle.waitMs('192.0.2.2')).toBe(0);
    now = 400;
    expect(throttle.waitMs('192.0.2.1')).toBe(600);
    now = 1_000;
    expect(throttle.waitMs('192.0.2.1')).toBe(0);
  });

  it('counts an IPv6 caller by its /64', () => {
    expect(throttledUnit('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(throttledUnit('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(throttledUnit('::ffff:192.0.2.7')).toBe('192.0.2.7');
  });

  it('remembers a bounded number of addresses, dropping recovered ones first', () => {
    let now = 0;
    const throttle = new CredentialThrottle({ burst: 1, refillMs: 1_000, maxAddresses: 2 }, () => now);
    throttle.refused('192.0.2.1');
    now = 5_000;
    throttle.refused('192.0.2.2');
    throttle.refused('192.0.2.3');
    expect(throttle.waitMs('192.0.2.2')).toBeGreaterThan(0);
    expect(throttle.waitMs('192.0.2.3')).toBeGreaterThan(0);
    expect(throttle.waitMs('192.0.2.1')).toBe(0);
  });
});
