import { registration } from '@gw/grpc';
import { meteringv1 } from '@gw/proto';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import { billingPeriodStartingOn, expectedOneOf, keyEnvironments } from '@gw/vocabulary';
import { environmentFromProto } from '@gw/vocabulary/proto';
import type { KeyUsageLine, KeyUsageReader, TokenTotals } from './key-usage';
import type { PeriodUsageQuery, PeriodUsageReader } from './period-usage';
import { addRefusals, refusalRows } from './refusal-store';
import type { Pool } from '@gw/db';

/** The request as a query, or invalid_request_error naming the field. */
export function periodUsageQuery(
  request: Pick<meteringv1.GetUsageRequest, 'accountId' | 'periodStart' | 'environment'>,
): Result<PeriodUsageQuery> {
  if (request.accountId.length === 0) return err(gatewayError('invalid_request_error', 'account_id: required.'));
  if (!billingPeriodStartingOn(request.periodStart)) {
    return err(
      gatewayError('invalid_request_error', 'period_start: expected the first day of a month, as YYYY-MM-DD.'),
    );
  }
  const environment = environmentFromProto(request.environment);
  if (!environment) {
    const expected = expectedOneOf(keyEnvironments, { quoted: false });
    return err(gatewayError('invalid_request_error', `environment: expected ${expected}.`));
  }
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
