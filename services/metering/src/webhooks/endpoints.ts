import type { Pool } from '@gw/db';
import { randomBase62 } from '@gw/ids';
import { newSigningSecret } from './signing';

/** An endpoint as stored, without its secrets. */
export interface EndpointRecord {
  id: string;
  accountId: string;
  url: string;
  eventTypes: string[];
  thresholdsPercent: number[];
  expiringWithinDays: number;
  createdAt: Date;
  previousSecretUntil: Date | null;
  deletedAt: Date | null;
}

export interface NewEndpoint {
  accountId: string;
  url: string;
  eventTypes: string[];
  thresholdsPercent: number[];
  expiringWithinDays: number;
}

const columns = `id, account_id, url, event_types, thresholds_percent, expiring_within_days, created_at,
                 previous_secret_until, deleted_at`;

interface EndpointRow {
  id: string;
  account_id: string;
  url: string;
  event_types: string[];
  thresholds_percent: number[];
  expiring_within_days: number;
  created_at: Date;
  previous_secret_until: Date | null;
  deleted_at: Date | null;
}

const toRecord = (row: EndpointRow): EndpointRecord => ({
  id: row.id,
  accountId: row.account_id,
  url: row.url,
  eventTypes: row.event_types,
  thresholdsPercent: row.thresholds_percent,
  expiringWithinDays: row.expiring_within_days,
  createdAt: row.created_at,
  previousSecretUntil: row.previous_secret_until,
  deletedAt: row.deleted_at,
});

export const newEndpointId = () => `whep_${randomBase62(20)}`;
/** Ids the gateway issues; anything else cannot name an endpoint or a message. */
const issuableId = /^[A-Za-z0-9_]{1,64}$/;

/** Endpoints and their delivery log in PostgreSQL. */
export class EndpointStore {
  constructor(private readonly pool: Pool) {}

  async create(endpoint: NewEndpoint): Promise<{ endpoint: EndpointRecord; secret: string }> {
    const secret = newSigningSecret();
    const { rows } = await this.pool.query<EndpointRow>(
      `INSERT INTO webhook_endpoints (id, account_id, url, event_types, thresholds_percent, expiring_within_days, secret)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${columns}`,
      [
        newEndpointId(),
        endpoint.accountId,
        endpoint.url,
        endpoint.eventTypes,
        endpoint.thresholdsPercent,
        endpoint.expiringWithinDays,
        secret,
      ],
    );
    return { endpoint: toRecord(rows[0]!), secret };
  }

  /** The account's endpoints not deleted, oldest first. */
  async list(accountId: string): Promise<EndpointRecord[]> {
    const { rows } = await this.pool.query<EndpointRow>(
      `SELECT ${columns} FROM webhook_endpoints WHERE account_id = $1 AND deleted_at IS NULL ORDER BY created_at, id`,
      [accountId],
    );
    return rows.map(toRecord);
  }

  async countLive(accountId: string): Promise<number> {
    const { rows } = await this.pool.query<{ count: string }>(
      `SELECT COUNT(*)::text AS count FROM webhook_endpoints WHERE account_id = $1 AND deleted_at IS NULL`,
      [accountId],
    );
    return Number(rows[0]!.count);
  }

  async get(id: string): Promise<EndpointRecord | undefined> {
    if (!issuableId.test(id)) return undefined;
    const { rows } = await this.pool.query<EndpointRow>(`SELECT ${columns} FROM webhook_endpoints WHERE id = $1`, [id]);
    return rows[0] && toRecord(rows[0]);
  }

  /** Deleted endpoints receive nothing more; their pending messages fail at their next turn. */
  async delete(id: string): Promise<EndpointRecord | undefined> {
    if (!issuableId.test(id)) return undefined;
    const { rows } = await this.pool.query<EndpointRow>(
      `UPDATE webhook_endpoints SET deleted_at = COALESCE(deleted_at, now()) WHERE id = $1 RETURNING ${columns}`,
      [id],
    );
    return rows[0] && toRecord(rows[0]);
  }

  /** A new secret signs from now on; the one it replaces signs beside it for graceMs. */
  async rotateSecret(id: string, graceMs: number): Promise<{ endpoint: EndpointRecord; secret: string } | undefined> {
    if (!issuableId.test(id)) return undefined;
    const secret = newSigningSecret();
    const { rows } = await this.pool.query<EndpointRow>(
      `UPDATE webhook_endpoints
          SET previous_secret = secret, secret = $2,
              previous_secret_until = now() + make_interval(secs => $3::float8 / 1000)
        WHERE id = $1 AND deleted_at IS NULL RETURNING ${columns}`,
      [id, secret, graceMs],
    );
    return rows[0] && { endpoint: toRecord(rows[0]), secret };
  }
}

/** One message of the delivery log with its attempts. */
export interface DeliveryRecord {
  id: string;
  endpointId: string;
  eventType: string;
  status: string;
  createdAt: Date;
  attempts: number;
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
  payload: string;
  attemptLog: { attemptedAt: Date; statusCode: number | null; error: string | null; durationMs: number }[];
}

const deliveriesSql = `
SELECT m.id, m.endpoint_id, m.event_type, m.status, m.created_at, m.attempts,
       CASE WHEN m.status = 'pending' THEN m.next_attempt_at END AS next_attempt_at, m.delivered_at,
       m.payload::text AS payload,
       COALESCE((SELECT json_agg(json_build_object('attempted_at', a.attempted_at, 'status_code', a.status_code,
                                                  'error', a.error, 'duration_ms', a.duration_ms)
                                 ORDER BY a.attempted_at, a.id)
                   FROM webhook_attempts a WHERE a.message_id = m.id), '[]') AS attempt_log
  FROM webhook_messages m
 WHERE m.endpoint_id = $1 AND ($3::text IS NULL OR m.id = $3)
 ORDER BY m.created_at DESC, m.id
 LIMIT $2`;

interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_type: string;
  status: string;
  created_at: Date;
  attempts: number;
  next_attempt_at: Date | null;
  delivered_at: Date | null;
  payload: string;
  attempt_log: { attempted_at: string; status_code: number | null; error: string | null; duration_ms: number }[];
}

const toDelivery = (row: DeliveryRow): DeliveryRecord => ({
  id: row.id,
  endpointId: row.endpoint_id,
  eventType: row.event_type,
  status: row.status,
  createdAt: row.created_at,
  attempts: row.attempts,
  nextAttemptAt: row.next_attempt_at,
  deliveredAt: row.delivered_at,
  payload: row.payload,
  attemptLog: row.attempt_log.map((attempt) => ({
    attemptedAt: new Date(attempt.attempted_at),
    statusCode: attempt.status_code,
    error: attempt.error,
    durationMs: attempt.duration_ms,
  })),
});

/** An endpoint's messages, newest first, each with its attempts. */
export async function listDeliveries(pool: Pool, endpointId: string, limit: number): Promise<DeliveryRecord[]> {
  const { rows } = await pool.query<DeliveryRow>(deliveriesSql, [endpointId, limit, null]);
  return rows.map(toDelivery);
}

/**
 * Sends a message again now, with the same webhook-id (a receiver that has it already can tell), and
 * retries it for a new window if that fails.
 */
export async function resendMessage(
  pool: Pool,
  endpointId: string,
  messageId: string,
  retryWindowMs: number,
): Promise<DeliveryRecord | undefined> {
  if (!issuableId.test(messageId)) return undefined;
  const { rowCount } = await pool.query(
    `UPDATE webhook_messages
        SET status = 'pending', next_attempt_at = now(), retry_until = now() + make_interval(secs => $3::float8 / 1000)
      WHERE id = $1 AND endpoint_id = $2`,
    [messageId, endpointId, retryWindowMs],
  );
  if (!rowCount) return undefined;
  const { rows } = await pool.query<DeliveryRow>(deliveriesSql, [endpointId, 1, messageId]);
  return rows[0] && toDelivery(rows[0]);
}
