import { adminApi } from '@gw/admin-api';
import { dailyKeyUsage, keyDailyUsageCsv } from '../key-usage';
import { requireAccount } from '../principal';
import { csv, json, serve } from '../route-kit';

/** The month per key and UTC day, as JSON or a CSV file. */
export const getKeyDailyUsage = serve(adminApi.getKeyDailyUsage, async ({ params, query }, { principal, clients }) => {
  const allowed = requireAccount(principal, params.id);
  if (!allowed.ok) return allowed;
  const usage = await dailyKeyUsage(clients, params.id, query);
  if (!usage.ok) return usage;
  const { report, month } = usage.value;
  if (query.format === 'csv') return csv(`usage-by-key-daily-${params.id}-${month}.csv`, keyDailyUsageCsv(report.data));
  return json(report);
});
