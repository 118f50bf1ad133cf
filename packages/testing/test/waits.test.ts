import { holdsFor, pace, waitUntil } from '../src';

describe('waitUntil', () => {
  it('resolves with the first accepted value', async () => {
    let calls = 0;
    const value = await waitUntil(
      () => (calls += 1),
      { what: 'the third call', intervalMs: 1 },
      (seen) => seen >= 3,
    );
    expect(value).toBe(3);
  });

  it('fails saying what it waited for and what it last saw, a thrown probe included', async () => {
    const probe = () => {
      throw new Error('not yet there');
    };
    await expect(waitUntil(probe, { what: 'the answer', timeoutMs: 30, intervalMs: 5 })).rejects.toThrow(
      'timed out after 30 ms waiting for the answer; last seen: error: not yet there',
    );
  });
});

describe('holdsFor', () => {
  it('passes when the value stays accepted for the whole time', async () => {
    const started = Date.now();
    await holdsFor(
      () => 1,
      { what: 'one', forMs: 40, intervalMs: 5 },
      (value) => value === 1,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(39);
  });

  it('fails at the first value refused', async () => {
    let calls = 0;
    await expect(
      holdsFor(
        () => (calls += 1),
        { what: 'a steady count', forMs: 1_000, intervalMs: 1 },
        (value) => value < 3,
      ),
    ).rejects.toThrow('a steady count stopped holding; seen: 3');
  });
});

describe('pace', () => {
  it('resolves true after the time, false at once when aborted', async () => {
    expect(await pace(5)).toBe(true);
    const controller = new AbortController();
    const paced = pace(10_000, controller.signal);
    controller.abort();
    expect(await paced).toBe(false);
    expect(await pace(10_000, AbortSignal.abort())).toBe(false);
  });
});
