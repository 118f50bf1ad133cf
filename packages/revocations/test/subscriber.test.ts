import { EventEmitter } from 'node:events';
import { subscribeToNotices } from '../src/subscriber';
import type { RevocationNotice } from '../src/notice';

// The subscriber's own logic (when it says notices flow, which messages it passes on), over a stand-in for the
// Redis connection; subscriber.int.test.ts runs it against a real Redis.

function deferred() {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((onResolve, onReject) => {
    resolve = onResolve;
    reject = onReject;
  });
  return { promise, resolve, reject };
}

class FakeRedis extends EventEmitter {
  static last: FakeRedis;
  readonly subscribed: string[] = [];
  disconnected = false;
  private subscription = deferred();
  private connection = deferred();

  constructor(
    readonly url: string,
    readonly options: object,
  ) {
    super();
    FakeRedis.last = this;
  }
  connect() {
    return this.connection.promise;
  }
  subscribe(channel: string) {
    this.subscribed.push(channel);
    return this.subscription.promise;
  }
  disconnect() {
    this.disconnected = true;
  }
  /** Redis confirmed the subscription. */
  confirm() {
    this.subscription.resolve();
    return this.subscription.promise;
  }
  refuseSubscription(error: Error) {
    this.subscription.reject(error);
    return this.subscription.promise.catch(() => undefined);
  }
  refuseConnection(error: Error) {
    this.connection.reject(error);
    return this.connection.promise.catch(() => undefined);
  }
}

// Hoisted above the class: the constructor is looked up when the subscriber calls it, not when the mock is made.
jest.mock('ioredis', () => ({
  __esModule: true,
  default: function Redis(url: string, options: object) {
    return new FakeRedis(url, options);
  },
}));

function recorder() {
  const seen = { notices: [] as RevocationNotice[], connected: [] as boolean[], errors: [] as string[] };
  return {
    seen,
    handlers: {
      onNotice: (notice: RevocationNotice) => seen.notices.push(notice),
      onConnectionChange: (connected: boolean) => seen.connected.push(connected),
      onError: (error: Error) => seen.errors.push(error.message),
    },
  };
}

it('says notices flow only once the channel is subscribed, and passes on the notices of that channel', async () => {
  const { seen, handlers } = recorder();
  await subscribeToNotices('redis://127.0.0.1:1', handlers);
  const redis = FakeRedis.last;
  expect(redis.subscribed).toEqual(['gateway:revocations']);

  // A connection alone carries no notices yet.
  redis.emit('ready');
  expect(seen.connected).toEqual([]);
  await redis.confirm();
  expect(seen.connected).toEqual([true]);

  redis.emit('message', 'gateway:revocations', '{"key_id":"key_1"}');
  redis.emit('message', 'another-channel', '{"key_id":"key_2"}');
  redis.emit('message', 'gateway:revocations', 'not a notice');
  redis.emit('message', 'gateway:revocations', '{"account_id":"acct_1"}');
  expect(seen.notices).toEqual([{ keyId: 'key_1' }, { accountId: 'acct_1' }]);
});

it('reports a drop once and the return once, so that callers flush what they cached meanwhile', async () => {
  const { seen, handlers } = recorder();
  await subscribeToNotices('redis://127.0.0.1:1', handlers);
  const redis = FakeRedis.last;
  await redis.confirm();
  redis.emit('close');
  redis.emit('close');
  redis.emit('ready');
  redis.emit('ready');
  expect(seen.connected).toEqual([true, false, true]);
});

it('reports errors rather than throwing, and keeps the process going when Redis is away', async () => {
  const { seen, handlers } = recorder();
  await subscribeToNotices('redis://127.0.0.1:1', handlers);
  const redis = FakeRedis.last;
  await redis.refuseConnection(new Error('connect ECONNREFUSED'));
  await redis.refuseSubscription(new Error('Connection is closed.'));
  redis.emit('error', new Error('read ECONNRESET'));
  expect(seen.errors).toEqual(['connect ECONNREFUSED', 'Connection is closed.', 'read ECONNRESET']);
  expect(seen.connected).toEqual([]);
});

it('closes its connection', async () => {
  const subscription = await subscribeToNotices('redis://127.0.0.1:1', recorder().handlers);
  await subscription.close();
  expect(FakeRedis.last.disconnected).toBe(true);
});
