import type { Pool } from '@gw/db';
import type { Logger } from '@gw/telemetry';
import type { KeyRecord } from './store';

// One message per endpoint of the account subscribed to the event, into metering's outbox (metering's
// dispatcher delivers it). The dedupe key makes the event once per endpoint, however often it is written.
const writeEventSql = `
INSERT INTO webhook_messages (id, endpoint_id, account_id, event_type, dedupe_key, payload)
SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, e.account_id, $2, $3, $4::jsonb
  FROM webhook_endpoints e
 WHERE e.account_id = $1 AND e.deleted_at IS NULL AND $2 = ANY (e.event_types)
ON CONFLICT (endpoint_id, dedupe_key) DO NOTHING`;

/**
 * Writes the key events an account's webhooks may subscribe to. A failure to write one is logged, never
 * turned against the change that raised it: the key is revoked or created whatever becomes of the event.
 */
export class KeyEvents {
  constructor(
    private readonly pool: Pool,
    private readonly logger: Logger,
  ) {}

  async revoked(key: KeyRecord): Promise<void> {
    await this.write(key.accountId, 'key.revoked', `key.revoked:${key.id}`, {
      account_id: key.accountId,
      key_id: key.id,
      revoked_at: key.revokedAt?.toISOString() ?? null,
    });
  }

  /** A key created to replace another of the same account. */
  async rotated(oldKeyId: string, created: KeyRecord): Promise<void> {
    await this.write(created.accountId, 'key.rotated', `key.rotated:${created.id}`, {
      account_id: created.accountId,
      key_id: oldKeyId,
      new_key_id: created.id,
    });
  }

  private async write(accountId: string, type: string, dedupeKey: string, data: Record<string, unknown>) {
    const payload = { type, timestamp: new Date().toISOString(), data };
    try {
      await this.pool.query(writeEventSql, [accountId, type, dedupeKey, JSON.stringify(payload)]);
    } catch (error) {
      this.logger.error({ err: error, account_id: accountId, event_type: type }, 'key event not written');
    }
  }
}
