import type { Environment, KeyDailyUsage, KeyUsage, KeyUsageLine } from '@gw/admin-api';
import { ok } from '@gw/errors';
import type { Result } from '@gw/errors';
import type { authv1, meteringv1 } from '@gw/proto';
import type { Clients } from '../clients';
import { billingPeriodOf, billingPeriodStartingOn } from '@gw/vocabulary';
import { roundGbp } from '../domain/usage-report';
import { csvText } from './csv';
import { environmentToProto } from '@gw/vocabulary/proto';
import { keyResource } from './resources';

/** The month a usage route reports: `period` (YYYY-MM, checked by the route's schema) or the current one. */
export function usageWindow(
  query: { period?: string | undefined; environment: Environment },
  now = new Date(),
): { start: Date; end: Date; environment: Environment } {
  const period =
    (query.period === undefined ? undefined : billingPeriodStartingOn(`${query.period}-01`)) ?? billingPeriodOf(now);
  return { start: period.start, end: period.end, environment: query.environment };
}

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

const csvRow = (line: KeyUsageLine) => [
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

export const keyUsageCsv = (lines: readonly KeyUsageLine[]) => csvText(csvHeader, lines.map(csvRow));
export const keyDailyUsageCsv = (lines: KeyDailyUsage['data']) =>
  csvText(
    ['day', ...csvHeader],
    lines.map((line) => [line.day, ...csvRow(line)]),
  );

/** What both reports ask metering, and how they name keys (deleted ones: null). */
async function reportContext(
  clients: Clients,
  accountId: string,
  query: { period?: string | undefined; environment: Environment },
) {
  const window = usageWindow(query);
  // An unknown account is 404, as on every other route, rather than a month of nothing.
  const [account, keys] = await Promise.all([
    clients.auth.getAccount({ id: accountId }),
    clients.auth.listKeys({ accountId }),
  ]);
  if (!account.ok) return account;
  if (!keys.ok) return keys;
  const known = new Map<string, authv1.ApiKey>(keys.value.keys.map((key) => [key.id, key]));
  const named = (keyId: string) => {
    const key = known.get(keyId);
    return { key_id: keyId, name: key?.name ?? null, display_prefix: key ? keyResource(key).display_prefix : null };
  };
  const request = {
    accountId,
    periodStart: window.start.toISOString().slice(0, 10),
    environment: environmentToProto(window.environment),
  };
  const period = { start: window.start.toISOString(), end: window.end.toISOString() };
  return ok({ request, named, period, environment: window.environment, month: request.periodStart.slice(0, 7) });
}

/** The month per key: usage that reached an upstream and refusals after the key verified. */
export async function monthlyKeyUsage(
  clients: Clients,
  accountId: string,
  query: { period?: string | undefined; environment: Environment },
): Promise<Result<{ report: KeyUsage; month: string }>> {
  const context = await reportContext(clients, accountId, query);
  if (!context.ok) return context;
  const { request, named, period, environment, month } = context.value;
  const usage = await clients.metering.getKeyUsage(request);
  if (!usage.ok) return usage;
  const data = usage.value.keys.map((line) => ({ ...named(line.keyId), ...keyLine(line.totals, line.refusals) }));
  return ok({ report: { period, environment, data }, month });
}

/** The month per key and UTC day, in day then key order. */
export async function dailyKeyUsage(
  clients: Clients,
  accountId: string,
  query: { period?: string | undefined; environment: Environment },
): Promise<Result<{ report: KeyDailyUsage; month: string }>> {
  const context = await reportContext(clients, accountId, query);
  if (!context.ok) return context;
  const { request, named, period, environment, month } = context.value;
  const usage = await clients.metering.getKeyDailyUsage(request);
  if (!usage.ok) return usage;
  const data = usage.value.days.map((line) => ({
    day: line.day,
    ...named(line.keyId),
    ...keyLine(line.totals, line.refusals),
  }));
  return ok({ report: { period, environment, data }, month });
}
