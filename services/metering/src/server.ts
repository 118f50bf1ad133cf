import { registration } from '@gw/grpc';
import { commonv1, meteringv1 } from '@gw/proto';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { KeyUsageLine, KeyUsageReader, TokenTotals } from './key-usage';
import type { PeriodUsageQuery, PeriodUsageReader } from './period-usage';
import { addRefusals, refusalRows } from './refusal-store';
import type { Pool } from '@gw/db';

/** The request as a query, or invalid_request_error naming the field. */
export function periodUsageQuery(
  request: Pick<meteringv1.GetUsageRequest, 'accountId' | 'periodStart' | 'environment'>,
): Result<PeriodUsageQuery> {
  if (request.accountId.length === 0) return err(gatewayError('invalid_request_error', 'account_id: required.'));
  const start = /^(\d{4})-(\d{2})-01$/.exec(request.periodStart);
  const [year, month] = start ? [Number(start[1]), Number(start[2])] : [0, 0];
  if (year < 1 || month < 1 || month > 12) {
    return err(
      gatewayError('invalid_request_error', 'period_start: expected the first day of a month, as YYYY-MM-DD.'),
    );
  }
  let environment: PeriodUsageQuery['environment'];
  if (request.environment === commonv1.Environment.LIVE) environment = 'live';
  else if (request.environment === commonv1.Environment.TEST) environment = 'test';
  else return err(gatewayError('invalid_request_error', 'environment: expected live or test.'));
  return ok({ accountId: request.accountId, periodStart: request.periodStart, environment });
}

export interface MeteringServiceDeps {
  usage: PeriodUsageReader;
  keyUsage: KeyUsageReader;
  pool: Pool;
  onStoreFailure(error: unknown): void;
}

const totalsMessage = (totals: TokenTotals) => ({ ...totals, costGbp: totals.costGbp || '0' });
const keyLineMessage = (line: KeyUsageLine) => ({
  keyId: line.keyId,
  totals: totalsMessage(line.totals),
  refusals: line.refusals,
});

export function meteringService(deps: MeteringServiceDeps) {
  const { usage, keyUsage } = deps;
  return registration(meteringv1.MeteringService, {
    async getUsage(request) {
      const query = periodUsageQuery(request);
      if (!query.ok) return query;
      return usage.read(query.value);
    },
    async getDailyUsage(request) {
      const query = periodUsageQuery(request);
      if (!query.ok) return query;
      const days = await usage.readDaily(query.value);
      return days.ok ? ok({ days: days.value }) : days;
    },
    async getKeyUsage(request) {
      const query = periodUsageQuery(request);
      if (!query.ok) return query;
      const lines = await keyUsage.readByKey(query.value);
      return lines.ok ? ok({ keys: lines.value.map(keyLineMessage) }) : lines;
    },
    async getKeyDailyUsage(request) {
      const query = periodUsageQuery(request);
      if (!query.ok) return query;
      const lines = await keyUsage.readByKeyAndDay(query.value);
      return lines.ok ? ok({ days: lines.value.map((line) => ({ day: line.day, ...keyLineMessage(line) })) }) : lines;
    },
    async recordRefusals(request) {
      const rows = refusalRows(request);
      if (!rows.ok) return rows;
      const added = await addRefusals(deps.pool, rows.value, deps.onStoreFailure);
      return added.ok ? ok({}) : added;
    },
  });
}
