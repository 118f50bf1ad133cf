import type { Pool, PoolClient } from '@gw/db';
import { randomBase62 } from '@gw/ids';

/** The events an endpoint may subscribe to. */
export const eventTypes = [
  'usage.threshold_crossed',
  'usage.ceiling_reached',
  'key.revoked',
  'key.rotated',
  'key.expiring',
] as const;
export type EventType = (typeof eventTypes)[number];

/** The webhook-id of a message: one per event and endpoint, the same on every attempt. */
export const newMessageId = () => `msg_${randomBase62(24)}`;

/** One event for one endpoint, to be written to the outbox. */
export interface OutboxEntry {
  endpointId: string;
  accountId: string;
  eventType: EventType;
  /** Makes the event once per endpoint (a threshold once per period, a revocation once per key). */
  dedupeKey: string;
  /** The whole delivered body: `{type, timestamp, data}`; ids and counts only, never request content. */
  payload: { type: EventType; timestamp: string; data: Record<string, unknown> };
}

const insertSql = `
INSERT INTO webhook_messages (id, endpoint_id, account_id, event_type, dedupe_key, payload, retry_until)
SELECT id, endpoint_id, account_id, event_type, dedupe_key, payload, now() + make_interval(secs => $7::float8 / 1000)
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[])
       AS entries (id, endpoint_id, account_id, event_type, dedupe_key, payload)
ON CONFLICT (endpoint_id, dedupe_key) DO NOTHING
RETURNING id`;

/** Writes entries in the caller's transaction; an event already written for its endpoint is skipped. */
export async function writeToOutbox(
  client: Pool | PoolClient,
  entries: readonly OutboxEntry[],
  retryWindowMs: number,
): Promise<number> {
  if (entries.length === 0) return 0;
  const { rowCount } = await client.query(insertSql, [
    entries.map(newMessageId),
    entries.map((entry) => entry.endpointId),
    entries.map((entry) => entry.accountId),
    entries.map((entry) => entry.eventType),
    entries.map((entry) => entry.dedupeKey),
    entries.map((entry) => JSON.stringify(entry.payload)),
    retryWindowMs,
  ]);
  return rowCount ?? 0;
}

/** A due message claimed by the dispatcher, with what it needs to deliver it. */
export interface ClaimedMessage {
  id: string;
  endpointId: string;
  accountId: string;
  eventType: string;
  /** The body, exactly as signed and sent. */
  body: string;
  attempts: number;
  retryUntil: Date;
  url: string;
  secrets: string[];
  endpointDeleted: boolean;
}

// Claimed by moving next_attempt_at past the attempt's longest time (a lease): another dispatcher skips
// the rows while this one holds them, and picks them up again if this one dies mid-delivery.
const claimSql = `
UPDATE webhook_messages m
   SET next_attempt_at = now() + make_interval(secs => $2::float8 / 1000), attempts = m.attempts + 1
  FROM webhook_endpoints e
 WHERE e.id = m.endpoint_id
   AND m.id IN (SELECT id FROM webhook_messages
                 WHERE status = 'pending' AND next_attempt_at <= now()
                 ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
RETURNING m.id, m.endpoint_id, m.account_id, m.event_type, m.payload::text AS body, m.attempts, m.retry_until,
          e.url, e.secret, e.previous_secret, e.previous_secret_until > now() AS previous_signs,
          e.deleted_at IS NOT NULL AS endpoint_deleted`;

export async function claimDue(pool: Pool, limit: number, leaseMs: number): Promise<ClaimedMessage[]> {
  const { rows } = await pool.query<{
    id: string;
    endpoint_id: string;
    account_id: string;
    event_type: string;
    body: string;
    attempts: number;
    retry_until: Date;
    url: string;
    secret: string;
    previous_secret: string | null;
    previous_signs: boolean | null;
    endpoint_deleted: boolean;
  }>(claimSql, [limit, leaseMs]);
  return rows.map((row) => ({
    id: row.id,
    endpointId: row.endpoint_id,
    accountId: row.account_id,
    eventType: row.event_type,
    body: row.body,
    attempts: row.attempts,
    retryUntil: row.retry_until,
    url: row.url,
    secrets: row.previous_signs && row.previous_secret ? [row.secret, row.previous_secret] : [row.secret],
    endpointDeleted: row.endpoint_deleted,
  }));
}

/** What became of an attempt: delivered, to be retried at a time, or given up. */
export type AttemptResult = { status: 'delivered' } | { status: 'pending'; nextAttemptAt: Date } | { status: 'failed' };

const recordSql = `
WITH attempt AS (
  INSERT INTO webhook_attempts (message_id, status_code, error, duration_ms) VALUES ($1, $2, $3, $4)
)
UPDATE webhook_messages
   SET status = $5,
       next_attempt_at = COALESCE($6::timestamptz, next_attempt_at),
       delivered_at = CASE WHEN $5 = 'delivered' THEN now() ELSE delivered_at END
 WHERE id = $1`;

/** Logs an attempt and moves its message on, in one statement. */
export async function recordAttempt(
  pool: Pool,
  messageId: string,
  attempt: { statusCode: number | null; error: string | null; durationMs: number },
  result: AttemptResult,
): Promise<void> {
  await pool.query(recordSql, [
    messageId,
    attempt.statusCode,
    attempt.error === null ? null : attempt.error.slice(0, 256),
    Math.round(attempt.durationMs),
    result.status,
    result.status === 'pending' ? result.nextAttemptAt.toISOString() : null,
  ]);
}

/**
 * When to try again after `attempts` failed attempts: twice as long as the time before, from baseMs up
 * to maxMs, with a tenth of jitter so that an endpoint back from an outage is not hit by every message
 * at once. Undefined past the message's retry window.
 */
export function nextAttemptAt(
  attempts: number,
  now: number,
  retryUntil: Date,
  backoff: { baseMs: number; maxMs: number },
  random: () => number = Math.random,
): Date | undefined {
  const delay = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.min(30, Math.max(0, attempts - 1)));
  const at = now + delay * (0.9 + 0.2 * random());
  return at <= retryUntil.getTime() ? new Date(at) : undefined;
}
