import type { Account, AccountLimits, ApiKey, CreatedApiKey } from './client';

/** One column of a table: its heading and how to show a row's cell. */
export interface Column<T> {
  heading: string;
  cell: (row: T) => unknown;
}

/** `--json`: one JSON object on one line, so scripts can pipe it into `jq`. */
export function renderJson(value: object): string {
  return `${JSON.stringify(value)}\n`;
}

/**
 * A cell as text: null is `-`, lists are comma-separated. Control characters are replaced because the
 * values come from the server and must not be able to drive the terminal.
 */
export function showValue(value: unknown): string {
  let text: string;
  if (value === null || value === undefined) text = '-';
  else if (Array.isArray(value)) text = value.length === 0 ? '-' : value.map((item) => showValue(item)).join(',');
  else if (typeof value === 'object') text = JSON.stringify(value);
  else text = String(value);
  return text.replace(/\p{Cc}/gu, '?');
}

/** Columns padded to their widest cell, two spaces apart, no trailing spaces. */
export function renderTable<T>(columns: Column<T>[], rows: T[]): string {
  const cells = [
    columns.map((column) => column.heading),
    ...rows.map((row) => columns.map((c) => showValue(c.cell(row)))),
  ];
  const widths = columns.map((_, index) => Math.max(...cells.map((line) => line[index]!.length)));
  return cells
    .map((line) =>
      line
        .map((cell, index) => (index === line.length - 1 ? cell : cell.padEnd(widths[index]!)))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

/** A single object as an aligned `name  value` block. */
export function renderFields(fields: [name: string, value: unknown][]): string {
  const width = Math.max(...fields.map(([name]) => name.length));
  return fields.map(([name, value]) => `${name.padEnd(width)}  ${showValue(value)}`.trimEnd() + '\n').join('');
}

/**
 * Drops any field named `key`: only the answer to a key's creation may show a key value, and a listing
 * must not print one even if a server sent it by mistake.
 */
export function withoutKeyValue<T extends object>(value: T): Omit<T, 'key'> {
  const { key: _key, ...rest } = value as T & { key?: unknown };
  return rest;
}

const accountColumns: Column<Account>[] = [
  { heading: 'ID', cell: (account) => account.id },
  { heading: 'NAME', cell: (account) => account.name },
  { heading: 'PLAN', cell: (account) => account.plan },
  { heading: 'STATUS', cell: (account) => account.status },
  { heading: 'CREATED', cell: (account) => account.created_at },
];

const keyColumns: Column<ApiKey>[] = [
  { heading: 'ID', cell: (key) => key.id },
  { heading: 'NAME', cell: (key) => key.name },
  { heading: 'ENV', cell: (key) => key.environment },
  { heading: 'PREFIX', cell: (key) => key.display_prefix },
  { heading: 'RESIDENCY', cell: (key) => key.residency },
  { heading: 'PRIVACY', cell: (key) => key.privacy_mode },
  { heading: 'STATUS', cell: (key) => key.status },
  { heading: 'EXPIRES', cell: (key) => key.expires_at },
  { heading: 'LAST USED', cell: (key) => key.last_used_at },
];

export function renderAccountTable(accounts: Account[]): string {
  return accounts.length === 0 ? 'No accounts.\n' : renderTable(accountColumns, accounts);
}

export function renderKeyTable(keys: ApiKey[]): string {
  return keys.length === 0 ? 'No keys.\n' : renderTable(keyColumns, keys);
}

/** A null limit is the plan's value, which is more useful to say than `-`. */
function limit(value: number | boolean | null | undefined): unknown {
  if (value === null || value === undefined) return '(plan default)';
  if (typeof value === 'boolean') return value ? 'on' : 'off';
  return value;
}

export function renderAccount(account: Account): string {
  // Tolerates an answer without limits rather than failing to show the rest.
  const limits: Partial<AccountLimits> = account.limits ?? {};
  return renderFields([
    ['id', account.id],
    ['name', account.name],
    ['plan', account.plan],
    ['status', account.status],
    ['suspended_at', account.suspended_at],
    ['created_at', account.created_at],
    ['requests_per_minute', limit(limits.requests_per_minute)],
    ['concurrency', limit(limits.concurrency)],
    ['monthly_tokens', limit(limits.monthly_tokens)],
    ['overage', limit(limits.overage)],
    ['hard_ceiling_tokens', limit(limits.hard_ceiling_tokens)],
  ]);
}

/** Every field but the key value, which only {@link renderCreatedKey} shows. */
export function renderKey(key: ApiKey): string {
  return renderFields([
    ['id', key.id],
    ['account_id', key.account_id],
    ['name', key.name],
    ['environment', key.environment],
    ['display_prefix', key.display_prefix],
    ['residency', key.residency],
    ['privacy_mode', key.privacy_mode],
    ['allowed_models', key.allowed_models ?? '(any)'],
    ['allowed_ips', key.allowed_ips ?? '(any)'],
    ['expires_at', key.expires_at ?? '(never)'],
    ['status', key.status],
    ['created_at', key.created_at],
  ]);
}

export function renderCreatedKey(created: CreatedApiKey): string {
  return (
    renderKey(created) +
    '\n' +
    `${showValue(created.key)}\n` +
    '\n' +
    'This is the key value. It will not be shown again: store it now (gwctl and the API cannot retrieve it).\n'
  );
}
