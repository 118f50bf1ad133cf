import { adminApi } from '@gw/admin-api';
import { keyUsageCsv, monthlyKeyUsage } from '../key-usage';
import { requireAccount } from '../principal';
import { csv, json, serve } from '../route-kit';

/** The month per key, as JSON or a CSV file. */
export const getKeyUsage = serve(adminApi.getKeyUsage, async ({ params, query }, { principal, clients }) => {
  const allowed = requireAccount(principal, params.id);
  if (!allowed.ok) return allowed;
  const usage = await monthlyKeyUsage(clients, params.id, query);
  if (!usage.ok) return usage;
  const { report, month } = usage.value;
  if (query.format === 'csv') return csv(`usage-by-key-${params.id}-${month}.csv`, keyUsageCsv(report.data));
  return json(report);
});
