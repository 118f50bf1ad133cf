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

/** Listens on the revocation channel with its own connection, resubscribing after every reconnect. */
export async function subscribeToNotices(redisUrl: string, handlers: NoticeHandlers): Promise<NoticeSubscription> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: null, connectTimeout: 2_000 });
  let connected = false;
  const setConnected = (value: boolean) => {
    if (value === connected) return;
    connected = value;
    handlers.onConnectionChange(value);
  };
  redis.on('error', (error: Error) => handlers.onError(error));
  redis.on('close', () => setConnected(false));
  // ioredis resubscribes by itself on reconnect (autoResubscribe) before it reports ready.
  redis.on('ready', () => setConnected(true));
  redis.on('message', (channel: string, message: string) => {
    if (channel !== revocationChannel) return;
    const notice = decodeNotice(message);
    if (notice) handlers.onNotice(notice);
  });
  await redis.connect();
  await redis.subscribe(revocationChannel);
  setConnected(true);
  return {
    close: async () => {
      redis.disconnect();
    },
  };
}
