import type { Pool } from '@gw/db';

const isoSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

// Keys that expire within each subscribed endpoint's notice period, not revoked, not expired yet. Once per
// key and expiry time: a key given a new expiry is announced again.
const expiringKeysSql = `
INSERT INTO webhook_messages (id, endpoint_id, account_id, event_type, dedupe_key, payload, retry_until)
SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, e.account_id, 'key.expiring',
       'key.expiring:' || k.id || ':' || (extract(epoch FROM k.expires_at) * 1000)::bigint,
       jsonb_build_object(
         'type', 'key.expiring',
         'timestamp', ${isoSql('now()')},
         'data', jsonb_build_object('account_id', k.account_id, 'key_id', k.id, 'expires_at', ${isoSql('k.expires_at')})),
       now() + make_interval(secs => $1::float8 / 1000)
  FROM webhook_endpoints e JOIN api_keys k ON k.account_id = e.account_id
 WHERE e.deleted_at IS NULL AND 'key.expiring' = ANY (e.event_types)
   AND k.revoked_at IS NULL AND k.expires_at > now()
   AND k.expires_at <= now() + make_interval(days => e.expiring_within_days)
ON CONFLICT (endpoint_id, dedupe_key) DO NOTHING`;

/** Writes key.expiring for every key newly within its endpoints' notice; returns how many were written. */
export async function writeExpiringKeyEvents(pool: Pool, retryWindowMs: number): Promise<number> {
  const { rowCount } = await pool.query(expiringKeysSql, [retryWindowMs]);
  return rowCount ?? 0;
}
