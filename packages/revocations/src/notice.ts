import type Redis from 'ioredis';

/** A key was revoked, or an account changed (suspended, resumed, limits): caches must forget it. */
export type RevocationNotice = { keyId: string } | { accountId: string };

/** The Redis pub/sub channel every ingress and auth replica listens on. */
export const revocationChannel = 'gateway:revocations';

export function encodeNotice(notice: RevocationNotice): string {
  return 'keyId' in notice
    ? JSON.stringify({ key_id: notice.keyId })
    : JSON.stringify({ account_id: notice.accountId });
}

export function decodeNotice(message: string): RevocationNotice | undefined {
  try {
    const parsed = JSON.parse(message) as { key_id?: unknown; account_id?: unknown };
    if (typeof parsed.key_id === 'string') return { keyId: parsed.key_id };
    if (typeof parsed.account_id === 'string') return { accountId: parsed.account_id };
  } catch {
    // fall through: not a notice of ours
  }
  return undefined;
}

export async function publishNotice(redis: Pick<Redis, 'publish'>, notice: RevocationNotice): Promise<void> {
  await redis.publish(revocationChannel, encodeNotice(notice));
}
