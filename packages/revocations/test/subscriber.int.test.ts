import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import Redis from 'ioredis';
import { waitUntil } from '@gw/testing';
import { publishNotice, subscribeToNotices } from '../src';
import type { RevocationNotice } from '../src';

/** A loopback port nothing listens on. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

describe('subscribeToNotices', () => {
  it('starts without Redis, reporting the failures, and never claims to be connected', async () => {
    const errors: Error[] = [];
    const changes: boolean[] = [];
    const subscription = await subscribeToNotices(`redis://127.0.0.1:${await closedPort()}`, {
      onNotice: () => undefined,
      onConnectionChange: (connected) => changes.push(connected),
      onError: (error) => errors.push(error),
    });
    await waitUntil(() => errors.length, { what: 'a connection failure reported', timeoutMs: 10_000 });
    expect(changes).not.toContain(true);
    await subscription.close();
  });

  it('reports the connection once subscribed and delivers notices', async () => {
    const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
    const notices: RevocationNotice[] = [];
    const changes: boolean[] = [];
    const subscription = await subscribeToNotices(url, {
      onNotice: (notice) => notices.push(notice),
      onConnectionChange: (connected) => changes.push(connected),
      onError: () => undefined,
    });
    const publisher = new Redis(url);
    try {
      await waitUntil(() => changes.includes(true), { what: 'the subscription', timeoutMs: 10_000 });
      await publishNotice(publisher, { keyId: 'key_subscriber_test' });
      await waitUntil(() => notices.length, { what: 'the notice', timeoutMs: 10_000 });
      expect(notices).toEqual([{ keyId: 'key_subscriber_test' }]);
    } finally {
      publisher.disconnect();
      await subscription.close();
    }
  });
});
