import { waitUntil } from '@gw/testing';
import { CurrentValue } from '../src/current-value';

/** Reads a subscription in the background, as a stream handler does. */
function collect<T>(subscription: AsyncGenerator<T, void, undefined>) {
  const seen: T[] = [];
  const ended = (async () => {
    for await (const value of subscription) seen.push(value);
  })();
  return { seen, ended };
}

describe('CurrentValue', () => {
  it('gives a subscriber the value in force at once, then every new one', async () => {
    const current = new CurrentValue('a');
    const stop = new AbortController();
    const reader = collect(current.subscribe(stop.signal));
    await waitUntil(() => reader.seen.length === 1, { what: 'the value in force' });
    current.set('b');
    await waitUntil(() => reader.seen.length === 2, { what: 'the new value' });
    expect(reader.seen).toEqual(['a', 'b']);
    expect(current.get()).toBe('b');
    stop.abort();
    await reader.ended;
  });

  it('lets a subscriber that fell behind skip to the newest value', async () => {
    const current = new CurrentValue(1);
    const stop = new AbortController();
    const subscription = current.subscribe(stop.signal);
    expect(await subscription.next()).toEqual({ done: false, value: 1 });
    current.set(2);
    current.set(3);
    expect(await subscription.next()).toEqual({ done: false, value: 3 });
    stop.abort();
    expect(await subscription.next()).toEqual({ done: true, value: undefined });
  });

  it('ends a waiting subscription when its signal aborts', async () => {
    const current = new CurrentValue('a');
    const stop = new AbortController();
    const reader = collect(current.subscribe(stop.signal));
    await waitUntil(() => reader.seen.length === 1, { what: 'the value in force' });
    stop.abort();
    await reader.ended;
    expect(reader.seen).toEqual(['a']);
  });

  it('ends every subscription on close, and any later one at once, while get still answers', async () => {
    const current = new CurrentValue('a');
    const readers = [
      collect(current.subscribe(new AbortController().signal)),
      collect(current.subscribe(new AbortController().signal)),
    ];
    await waitUntil(() => readers.every((reader) => reader.seen.length === 1), { what: 'both subscribers served' });
    current.close();
    await Promise.all(readers.map((reader) => reader.ended));
    const late = collect(current.subscribe(new AbortController().signal));
    await late.ended;
    expect(late.seen).toEqual([]);
    expect(current.get()).toBe('a');
  });
});
