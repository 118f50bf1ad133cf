import Redis from 'ioredis';
import { decodeNotice, revocationChannel } from './notice';
import type { RevocationNotice } from './notice';

export interface NoticeHandlers {
  onNotice(notice: RevocationNotice): void;
  /**
   * Called with false when the subscription drops (notices may be missed from then on) and with true
   * once it is back, so that callers can stop trusting and flush what they cached meanwhile.
   */
  onConnectionChange(connected: boolean): void;
  onError(error: Error): void;
}

export interface NoticeSubscription {
  close(): Promise<void>;
}

/**
 * Listens on the revocation channel with its own connection, resubscribing after every reconnect. Resolves
 * at once: onConnectionChange(true) says when notices flow (callers trust nothing cached before).
 */
export async function subscribeToNotices(redisUrl: string, handlers: NoticeHandlers): Promise<NoticeSubscription> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: null, connectTimeout: 2_000 });
  let connected = false;
  const setConnected = (value: boolean) => {
    if (value === connected) return;
    connected = value;
    handlers.onConnectionChange(value);
  };
  /** Set once the first subscription is made; before, a connection alone does not carry notices. */
  let subscribed = false;
  redis.on('error', (error: Error) => handlers.onError(error));
  redis.on('close', () => setConnected(false));
  // ioredis resubscribes by itself on reconnect (autoResubscribe) before it reports ready.
  redis.on('ready', () => {
    if (subscribed) setConnected(true);
  });
  redis.on('message', (channel: string, message: string) => {
    if (channel !== revocationChannel) return;
    const notice = decodeNotice(message);
    if (notice) handlers.onNotice(notice);
  });
  // Not awaited: a first connection that fails (Redis away, or slow to answer a pod that is starting) must
  // not stop the process. ioredis keeps trying; the subscription waits in its queue and is made on connect.
  redis
    .connect()
    .catch((error: unknown) => handlers.onError(error instanceof Error ? error : new Error(String(error))));
  redis.subscribe(revocationChannel).then(
    () => {
      subscribed = true;
      setConnected(true);
    },
    (error: unknown) => handlers.onError(error instanceof Error ? error : new Error(String(error))),
  );
  return {
    close: async () => {
      redis.disconnect();
    },
  };
}
