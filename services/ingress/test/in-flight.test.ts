import { InFlightRequests } from '../src/in-flight';

describe('InFlightRequests', () => {
  it('aborts every request of a revoked key with authentication_error, and only those', () => {
    const inFlight = new InFlightRequests();
    const first = inFlight.register('key_a');
    const second = inFlight.register('key_a');
    const other = inFlight.register('key_b');
    expect(inFlight.revokeKey('key_a')).toBe(2);
    expect(first.signal.aborted && second.signal.aborted).toBe(true);
    expect(first.signal.reason).toEqual(expect.objectContaining({ type: 'authentication_error' }));
    expect(other.signal.aborted).toBe(false);
  });

  it('stops a request that passed auth just before the revocation arrived', () => {
    let now = 1_000;
    const inFlight = new InFlightRequests(() => now);
    inFlight.revokeKey('key_a');
    expect(inFlight.register('key_a').signal.aborted).toBe(true);
    now += 60_000;
    inFlight.revokeKey('key_other');
    expect(inFlight.register('key_a').signal.aborted).toBe(false);
  });

  it('forgets requests that ended', () => {
    const inFlight = new InFlightRequests();
    inFlight.register('key_a').unregister();
    expect(inFlight.count()).toBe(0);
    expect(inFlight.revokeKey('key_a')).toBe(0);
  });
});
