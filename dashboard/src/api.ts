/** The admin API of docs/admin-api.md, called with the credential the session holds in memory. */
import type { KeyEnvironment as Environment, PrivacyMode, ResidencyTier as Residency } from '@gw/vocabulary';

export interface Limits {
  requests_per_minute: number | null;
  concurrency: number | null;
  monthly_tokens: number | null;
  overage: boolean | null;
  hard_ceiling_tokens: number | null;
}

export interface Account {
  id: string;
  name: string;
  plan: string;
  status: 'active' | 'suspended';
  suspended_at: string | null;
  created_at: string;
  limits: Limits;
}

export type { Environment, PrivacyMode, Residency };
export type KeyStatus = 'active' | 'revoked' | 'expired';

export interface Key {
  id: string;
  account_id: string;
  name: string;
  environment: Environment;
  display_prefix: string;
  residency: Residency;
  privacy_mode: PrivacyMode;
  allowed_models: string[] | null;
  allowed_ips: string[] | null;
  expires_at: string | null;
  status: KeyStatus;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** The key a rotation made this one to replace. */
  replaces_key_id: string | null;
}

export interface AdminKey {
  id: string;
  account_id: string;
  name: string;
  display_prefix: string;
  status: KeyStatus;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** One page of a list; `next_after` asks for the next. */
export interface Page<T> {
  data: T[];
  next_after: string | null;
}

export interface KeyQuery {
  q: string;
  status: KeyStatus | '';
  environment: Environment | '';
  after: string;
}

/** A key's editable fields; absent: unchanged, null: cleared. */
export interface KeyChanges {
  name?: string;
  allowed_models?: string[] | null;
  allowed_ips?: string[] | null;
}

export interface AuditEntry {
  seq: number;
  at: string;
  actor: { kind: 'operator' | 'admin_key' | 'unknown'; id: string | null };
  account_id: string | null;
  source_address: string;
  action: string;
  target: { kind: string; id: string } | null;
  before: unknown;
  after: unknown;
}

/** One limit: the value in force, the plan's, and the account's override. */
export interface LimitView<T> {
  value: T;
  plan: T;
  override: T | null;
}

export interface LimitsView {
  account_id: string;
  plan: string;
  residency: Residency[];
  models: 'all' | string[];
  requests_per_minute: LimitView<number>;
  concurrency: LimitView<number>;
  monthly_tokens: LimitView<number>;
  overage: LimitView<boolean>;
  hard_ceiling_tokens: LimitView<number>;
}

/** A key as its creation or rotation answers it: the only time the value is seen. */
export type CreatedKey = Key & { key: string; replaces?: string };

export type CreatedAdminKey = AdminKey & { key: string };

export interface NewKey {
  account_id: string;
  name: string;
  environment: Environment;
  residency: Residency;
  privacy_mode: PrivacyMode;
  allowed_models: string[] | null;
  allowed_ips: string[] | null;
  expires_at: string | null;
}

export interface AccountUsage {
  period: { start: string; end: string };
  plan: string;
  environment: Environment;
  tokens: {
    allowance: number;
    used: number;
    remaining: number;
    percent_used: number;
    overage_allowed: boolean;
    overage: number;
  };
  by_model: { model: string; requests: number; billable_tokens: number; cost_gbp: number }[];
  daily: { day: string; requests: number; billable_tokens: number }[];
}

/** A refusal of the admin API; `field` is the body field its message names, if any. */
export class AdminApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly field: string | undefined,
  ) {
    super(message);
  }
}

interface ErrorEnvelope {
  error?: { type?: string; message?: string };
}

/** The API words a field's refusal as `field: …` or `field.index: …` (allowed_ips.1: …). */
const fieldPattern = /^([a-z_]+)(?:\.(\d+))?: /;
const fieldOf = (message: string) => fieldPattern.exec(message)?.[1];

const fieldLabels: Record<string, string> = {
  name: 'Name',
  plan: 'Plan',
  environment: 'Environment',
  residency: 'Residency',
  privacy_mode: 'Privacy mode',
  allowed_models: 'Allowed models',
  allowed_ips: 'Allowed addresses',
  expires_at: 'Expiry',
  requests_per_minute: 'Requests per minute',
  concurrency: 'Concurrency',
  monthly_tokens: 'Monthly tokens',
  hard_ceiling_tokens: 'Hard ceiling',
  overage: 'Overage',
};

/** `allowed_ips.0: "x" is not…` → `Allowed addresses, entry 1: "x" is not…`: words, not the API's field paths. */
export function readableMessage(message: string): string {
  const match = fieldPattern.exec(message);
  if (!match) return message;
  const label = fieldLabels[match[1]!] ?? match[1]!.replaceAll('_', ' ');
  const entry = match[2] === undefined ? '' : `, entry ${Number(match[2]) + 1}`;
  return `${label}${entry}: ${message.slice(match[0].length)}`;
}

const query = (parameters: Record<string, string | undefined>) => {
  const entries = Object.entries(parameters).filter((entry): entry is [string, string] => Boolean(entry[1]));
  return entries.length === 0 ? '' : `?${new URLSearchParams(entries).toString()}`;
};

export class AdminClient {
  constructor(
    private readonly credential: string,
    /** Told of every call, so that the session's idle clock counts the user's actions. */
    private readonly onCall: (status: number) => void,
  ) {}

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(`/admin/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.credential}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
    });
    this.onCall(response.status);
    const parsed: unknown = await response.json().catch(() => ({}));
    if (response.ok) return parsed as T;
    const error = (parsed as ErrorEnvelope).error;
    const message = error?.message ?? `The admin API answered ${response.status}.`;
    throw new AdminApiError(response.status, error?.type ?? 'api_error', readableMessage(message), fieldOf(message));
  }

  listAccounts = () => this.call<{ data: Account[] }>('GET', '/accounts').then((list) => list.data);
  searchAccounts = (parameters: { q: string; status: string; after: string }) =>
    this.call<Page<Account>>('GET', `/accounts${query(parameters)}`);
  createAccount = (name: string, plan: string) => this.call<Account>('POST', '/accounts', { name, plan });
  setSuspended = (id: string, suspended: boolean) =>
    this.call<Account>('POST', `/accounts/${encodeURIComponent(id)}/${suspended ? 'suspend' : 'resume'}`);
  setLimits = (id: string, limits: Partial<Limits>) =>
    this.call<Account>('PATCH', `/accounts/${encodeURIComponent(id)}/limits`, limits);
  createAdminKey = (id: string, name: string, expiresAt: string | null = null) =>
    this.call<CreatedAdminKey>('POST', `/accounts/${encodeURIComponent(id)}/admin-keys`, {
      name,
      expires_at: expiresAt,
    });
  listAdminKeys = (id: string, after = '') =>
    this.call<Page<AdminKey>>('GET', `/accounts/${encodeURIComponent(id)}/admin-keys${query({ after })}`);
  revokeAdminKey = (id: string) => this.call<AdminKey>('POST', `/admin-keys/${encodeURIComponent(id)}/revoke`);
  limits = (id: string) => this.call<LimitsView>('GET', `/accounts/${encodeURIComponent(id)}/limits`);
  audit = (accountId: string, action: string, before: number | null) =>
    this.call<{ data: AuditEntry[]; next_before: number | null }>(
      'GET',
      `/audit${query({ account_id: accountId, action, before: before === null ? undefined : String(before) })}`,
    );
  updateKey = (id: string, changes: KeyChanges) => this.call<Key>('PATCH', `/keys/${encodeURIComponent(id)}`, changes);
  usage = (id: string, environment: Environment) =>
    this.call<AccountUsage>('GET', `/accounts/${encodeURIComponent(id)}/usage?environment=${environment}`);
  listKeys = (accountId: string, parameters: KeyQuery) =>
    this.call<Page<Key>>('GET', `/keys${query({ account_id: accountId, ...parameters })}`);
  createKey = (key: NewKey) => this.call<CreatedKey>('POST', '/keys', key);
  rotateKey = (id: string) => this.call<CreatedKey>('POST', `/keys/${encodeURIComponent(id)}/rotate`);
  revokeKey = (id: string) => this.call<Key>('POST', `/keys/${encodeURIComponent(id)}/revoke`);
  /** Any other route, for the panels that keep their own typed calls (usage-api.ts). */
  request = <T>(method: string, path: string, body?: unknown) => this.call<T>(method, path, body);
  /** A file the API answers (CSV), as text, with the name it gives it. */
  download = async (path: string): Promise<{ text: string; filename: string }> => {
    const response = await fetch(`/admin/v1${path}`, {
      headers: { authorization: `Bearer ${this.credential}` },
      cache: 'no-store',
      credentials: 'omit',
    });
    this.onCall(response.status);
    if (!response.ok)
      throw new AdminApiError(response.status, 'api_error', `The admin API answered ${response.status}.`, undefined);
    const disposition = response.headers.get('content-disposition') ?? '';
    return { text: await response.text(), filename: /filename="([^"]+)"/.exec(disposition)?.[1] ?? 'export.csv' };
  };
}
