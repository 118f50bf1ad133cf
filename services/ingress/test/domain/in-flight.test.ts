import { InFlightRequests } from '../../src/domain/in-flight';

const presented = { presentedKey: 'sk-live-a', sourceAddress: '203.0.113.7', requestId: 'req_1' };

describe('InFlightRequests', () => {
  it('aborts every request of a revoked key with authentication_error, and only those', () => {
    const inFlight = new InFlightRequests();
    const first = inFlight.register('key_a', presented);
    const second = inFlight.register('key_a', presented);
    const other = inFlight.register('key_b', presented);
    expect(inFlight.revokeKey('key_a')).toBe(2);
    expect(first.signal.aborted && second.signal.aborted).toBe(true);
    expect(first.signal.reason).toEqual(expect.objectContaining({ type: 'authentication_error' }));
    expect(other.signal.aborted).toBe(false);
  });

  it('stops a request that passed auth just before the revocation arrived', () => {
    let now = 1_000;
    const inFlight = new InFlightRequests(() => now);
    inFlight.revokeKey('key_a');
    expect(inFlight.register('key_a', presented).signal.aborted).toBe(true);
    now += 60_000;
    inFlight.revokeKey('key_other');
    expect(inFlight.register('key_a', presented).signal.aborted).toBe(false);
  });

  it('forgets requests that ended', () => {
    const inFlight = new InFlightRequests();
    inFlight.register('key_a', presented).unregister();
    expect(inFlight.count()).toBe(0);
    expect(inFlight.revokeKey('key_a')).toBe(0);
  });

  it("ends a key's requests with the error given", () => {
    const inFlight = new InFlightRequests();
    const request = inFlight.register('key_a', presented);
    const suspended = { type: 'permission_error' as const, message: 'suspended' };
    expect(inFlight.endKey('key_a', suspended)).toBe(1);
    expect(request.signal.reason).toBe(suspended);
    // Not a revocation: a request registered next is not stopped by it.
    expect(inFlight.register('key_a', presented).signal.aborted).toBe(false);
  });

  it('lists one request per key and source address, leaving out those already ended', () => {
    const inFlight = new InFlightRequests();
    inFlight.register('key_a', presented);
    inFlight.register('key_a', { ...presented, requestId: 'req_2' });
    inFlight.register('key_a', { ...presented, sourceAddress: '198.51.100.1', requestId: 'req_3' });
    inFlight.register('key_b', { ...presented, presentedKey: 'sk-live-b', requestId: 'req_4' });
    inFlight.register('key_c', { ...presented, presentedKey: 'sk-live-c', requestId: 'req_5' });
    inFlight.revokeKey('key_c');
    expect(inFlight.keysInFlight().map(({ keyId, credentials }) => [keyId, credentials.sourceAddress])).toEqual([
      ['key_a', '203.0.113.7'],
      ['key_a', '198.51.100.1'],
      ['key_b', '203.0.113.7'],
    ]);
  });
});
