import type express from 'express';
import type { Request } from 'express';
import { err, gatewayError, ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { authv1, meteringv1 } from '@gw/proto';
import { billingPeriod, roundGbp } from '../usage-report';
import { adminRoute, csv, csvText, json } from './handlers';
import { requireAccount } from './principal';
import { environmentNames, keyResource } from './resources';
import type { AdminRoutesOptions } from './routes';

/** The period and environment a usage route reports: `?period=YYYY-MM` (default: the current month), `?environment=`. */
export function usageWindow(
  query: Request['query'],
  now = new Date(),
): Result<{ start: Date; end: Date; environment: 'live' | 'test' }> {
  const environment = query.environment ?? 'live';
  if (environment !== 'live' && environment !== 'test') {
    return err(gatewayError('invalid_request_error', 'environment: expected "live" or "test".'));
  }
  if (query.period === undefined) return ok({ ...billingPeriod(now), environment });
  const month = typeof query.period === 'string' ? /^(\d{4})-(0[1-9]|1[0-2])$/.exec(query.period) : null;
  if (!month) return err(gatewayError('invalid_request_error', 'period: expected a month as YYYY-MM.'));
  return ok({ ...billingPeriod(new Date(Date.UTC(Number(month[1]), Number(month[2]) - 1, 1))), environment });
}

const format = (query: Request['query']): Result<'json' | 'csv'> =>
  query.format === undefined || query.format === 'json' || query.format === 'csv'
    ? ok((query.format ?? 'json') as 'json' | 'csv')
    : err(gatewayError('invalid_request_error', 'format: expected "json" or "csv".'));

const exactGbp = (decimal: string) => decimal || '0';

/** One key's line: its sums, its cost rounded as everywhere else and exact, its refusals by reason. */
function keyLine(totals: meteringv1.TokenTotals | undefined, refusals: meteringv1.RefusalCount[]) {
  return {
    requests: Number(totals?.requests ?? 0n),
    input_tokens: Number(totals?.inputTokens ?? 0n),
    output_tokens: Number(totals?.outputTokens ?? 0n),
    cache_read_input_tokens: Number(totals?.cacheReadInputTokens ?? 0n),
    cache_creation_input_tokens: Number(totals?.cacheCreationInputTokens ?? 0n),
    billable_tokens: Number(totals?.billableTokens ?? 0n),
    cost_gbp: roundGbp(exactGbp(totals?.costGbp ?? '')),
    cost_gbp_exact: exactGbp(totals?.costGbp ?? ''),
    refusals: Object.fromEntries(refusals.map((count) => [count.reason, Number(count.refusals)])),
  };
}

type KeyLine = ReturnType<typeof keyLine> & { key_id: string; name: string | null; display_prefix: string | null };

const csvHeader = [
  'key_id',
  'name',
  'display_prefix',
  'requests',
  'input_tokens',
  'output_tokens',
  'cache_read_input_tokens',
  'cache_creation_input_tokens',
  'billable_tokens',
  'cost_gbp',
  'refusals',
];

const csvRow = (line: KeyLine) => [
  line.key_id,
  line.name ?? '',
  line.display_prefix ?? '',
  line.requests,
  line.input_tokens,
  line.output_tokens,
  line.cache_read_input_tokens,
  line.cache_creation_input_tokens,
  line.billable_tokens,
  line.cost_gbp_exact,
  Object.entries(line.refusals)
    .map(([reason, count]) => `${reason}=${count}`)
    .join(' '),
];

/** Usage per key of one account: the month (`/usage/keys`) and each day (`/usage/keys/daily`), JSON or CSV. */
export function mountKeyUsageRoutes(router: express.Router, options: AdminRoutesOptions): void {
  const route = adminRoute(options);
  const { auth, metering } = options.clients;

  const prepare = async (request: Request, principal: Parameters<typeof requireAccount>[0]) => {
    const accountId = String(request.params.id);
    const allowed = requireAccount(principal, accountId);
    if (!allowed.ok) return allowed;
    const window = usageWindow(request.query);
    if (!window.ok) return window;
    const wanted = format(request.query);
    if (!wanted.ok) return wanted;
    // An unknown account is 404, as on every other route, rather than a month of nothing.
    const [account, keys] = await Promise.all([auth.getAccount({ id: accountId }), auth.listKeys({ accountId })]);
    if (!account.ok) return account;
    if (!keys.ok) return keys;
    const known = new Map<string, authv1.ApiKey>(keys.value.keys.map((key) => [key.id, key]));
    const named = (keyId: string) => {
      const key = known.get(keyId);
      return { key_id: keyId, name: key?.name ?? null, display_prefix: key ? keyResource(key).display_prefix : null };
    };
    const query = {
      accountId,
      periodStart: window.value.start.toISOString().slice(0, 10),
      environment: environmentNames[window.value.environment]!,
    };
    const period = { start: window.value.start.toISOString(), end: window.value.end.toISOString() };
    const month = query.periodStart.slice(0, 7);
    return ok({ accountId, query, period, month, named, format: wanted.value, environment: window.value.environment });
  };

  router.get(
    '/accounts/:id/usage/keys',
    route(async (request, principal) => {
      const asked = await prepare(request, principal);
      if (!asked.ok) return asked;
      const { query, named } = asked.value;
      const usage = await metering.getKeyUsage(query);
      if (!usage.ok) return usage;
      const data: KeyLine[] = usage.value.keys.map((line) => ({
        ...named(line.keyId),
        ...keyLine(line.totals, line.refusals),
      }));
      if (asked.value.format === 'csv') {
        return csv(
          `usage-by-key-${asked.value.accountId}-${asked.value.month}.csv`,
          csvText(csvHeader, data.map(csvRow)),
        );
      }
      return json({ period: asked.value.period, environment: asked.value.environment, data });
    }),
  );

  router.get(
    '/accounts/:id/usage/keys/daily',
    route(async (request, principal) => {
      const asked = await prepare(request, principal);
      if (!asked.ok) return asked;
      const { query, named } = asked.value;
      const usage = await metering.getKeyDailyUsage(query);
      if (!usage.ok) return usage;
      const data = usage.value.days.map((line) => ({
        day: line.day,
        ...named(line.keyId),
        ...keyLine(line.totals, line.refusals),
      }));
      if (asked.value.format === 'csv') {
        return csv(
          `usage-by-key-daily-${asked.value.accountId}-${asked.value.month}.csv`,
          csvText(
            ['day', ...csvHeader],
            data.map((line) => [line.day, ...csvRow(line)]),
          ),
        );
      }
      return json({ period: asked.value.period, environment: asked.value.environment, data });
    }),
  );
}
