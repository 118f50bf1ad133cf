/** The admin API of docs/admin-api.md, called with the credential the session holds in memory. */

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

export type Environment = 'live' | 'test';
export type Residency = 'uk' | 'eu';
export type PrivacyMode = 'off' | 'flag' | 'redact' | 'tokenise';
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
}

/** A key as its creation or rotation answers it: the only time the value is seen. */
export type CreatedKey = Key & { key: string; replaces?: string };

export interface CreatedAdminKey {
  id: string;
  account_id: string;
  name: string;
  display_prefix: string;
  created_at: string;
  key: string;
}

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
const fieldOf = (message: string) => /^([a-z_]+)(?:\.\d+)?: /.exec(message)?.[1];

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
    throw new AdminApiError(response.status, error?.type ?? 'api_error', message, fieldOf(message));
  }

  listAccounts = () => this.call<{ data: Account[] }>('GET', '/accounts').then((list) => list.data);
  createAccount = (name: string, plan: string) => this.call<Account>('POST', '/accounts', { name, plan });
  setSuspended = (id: string, suspended: boolean) =>
    this.call<Account>('POST', `/accounts/${encodeURIComponent(id)}/${suspended ? 'suspend' : 'resume'}`);
  setLimits = (id: string, limits: Partial<Limits>) =>
    this.call<Account>('PATCH', `/accounts/${encodeURIComponent(id)}/limits`, limits);
  createAdminKey = (id: string, name: string) =>
    this.call<CreatedAdminKey>('POST', `/accounts/${encodeURIComponent(id)}/admin-keys`, { name });
  usage = (id: string, environment: Environment) =>
    this.call<AccountUsage>('GET', `/accounts/${encodeURIComponent(id)}/usage?environment=${environment}`);
  listKeys = (accountId: string) =>
    this.call<{ data: Key[] }>('GET', `/keys?account_id=${encodeURIComponent(accountId)}`).then((list) => list.data);
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
