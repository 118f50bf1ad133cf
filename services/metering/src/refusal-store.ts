import type { Pool } from '@gw/db';
import { dependencyUnavailableError, err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { meteringv1 } from '@gw/proto';
import type { KeyEnvironment } from '@gw/vocabulary';
import { environmentFromProto } from '@gw/vocabulary/proto';

/** One ingress flush of refusal counts, checked. */
export interface RefusalCountRow {
  accountId: string;
  keyId: string;
  environment: KeyEnvironment;
  day: string;
  reason: string;
  refusals: bigint;
}

/** Far more lines than one flush of one ingress holds (its map is bounded well below). */
const maxLinesPerFlush = 100_000;
const idPattern = /^[A-Za-z0-9_]{1,64}$/;
// An error type, and the kind of refusal where it has one: rate_limit_error.per_minute.
const reasonPattern = /^[a-z_]{1,64}(\.[a-z_]{1,64})?$/;
const dayPattern = /^\d{4}-\d{2}-\d{2}$/;

/** The request's lines as rows, or invalid_request_error naming the first bad one. */
export function refusalRows(request: meteringv1.RecordRefusalsRequest): Result<RefusalCountRow[]> {
  if (request.counts.length > maxLinesPerFlush) {
    return err(gatewayError('invalid_request_error', `counts: at most ${maxLinesPerFlush} lines.`));
  }
  const rows: RefusalCountRow[] = [];
  for (const [index, line] of request.counts.entries()) {
    const bad = (field: string) => err(gatewayError('invalid_request_error', `counts.${index}.${field}: invalid.`));
    if (!idPattern.test(line.accountId)) return bad('account_id');
    if (!idPattern.test(line.keyId)) return bad('key_id');
    if (!reasonPattern.test(line.reason)) return bad('reason');
    if (!dayPattern.test(line.day) || Number.isNaN(Date.parse(line.day))) return bad('day');
    if (line.refusals <= 0n || line.refusals > 10n ** 12n) return bad('refusals');
    const environment = environmentFromProto(line.environment);
    if (!environment) return bad('environment');
    rows.push({
      accountId: line.accountId,
      keyId: line.keyId,
      environment,
      day: line.day,
      reason: line.reason,
      refusals: line.refusals,
    });
  }
  return ok(rows);
}

// One statement per flush. Lines are summed per primary key first: ON CONFLICT cannot touch a row twice.
const addRefusalsSql = `
INSERT INTO key_refusals (account_id, key_id, environment, day, reason, refusals)
SELECT account_id, key_id, environment, day, reason, SUM(refusals)
  FROM unnest($1::text[], $2::text[], $3::text[], $4::date[], $5::text[], $6::bigint[])
       AS lines (account_id, key_id, environment, day, reason, refusals)
 GROUP BY 1, 2, 3, 4, 5
 ORDER BY 1, 4, 2, 3, 5
ON CONFLICT (account_id, day, key_id, environment, reason) DO UPDATE SET
  refusals = key_refusals.refusals + EXCLUDED.refusals`;

/** Adds a flush's counts to key_refusals. */
export async function addRefusals(
  pool: Pool,
  rows: readonly RefusalCountRow[],
  onFailure: (error: unknown) => void,
): Promise<Result<void>> {
  if (rows.length === 0) return ok(undefined);
  const column = <T>(pick: (row: RefusalCountRow) => T) => rows.map(pick);
  try {
    await pool.query(addRefusalsSql, [
      column((row) => row.accountId),
      column((row) => row.keyId),
      column((row) => row.environment),
      column((row) => row.day),
      column((row) => row.reason),
      column((row) => row.refusals.toString()),
    ]);
    return ok(undefined);
  } catch (error) {
    onFailure(error);
    return err(dependencyUnavailableError('usage store'));
  }
}
