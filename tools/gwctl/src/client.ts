/** Typed client of the Admin HTTP API (docs/admin-api.md). Failures are returned as values, never thrown. */

import type { KeyEnvironment, PrivacyMode, ResidencyTier as Residency } from '@gw/vocabulary';

export type { KeyEnvironment, PrivacyMode, Residency };
export type AccountStatus = 'active' | 'suspended';
export type KeyStatus = 'active' | 'revoked' | 'expired';

/** The account's overrides of its plan; null means the plan's value. */
export interface AccountLimits {
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
  status: AccountStatus;
  suspended_at: string | null;
  created_at: string;
  limits: AccountLimits;
}

/** A key as the API lists it: never the key value. */
export interface ApiKey {
  id: string;
  account_id: string;
  name: string;
  environment: KeyEnvironment;
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

/** The answer to a key's creation, the only one that carries the value. */
export interface CreatedApiKey extends ApiKey {
  key: string;
}

export interface ListOf<T> {
  data: T[];
}

export interface NewAccount {
  name: string;
  plan: string;
}

/** Only the fields present are changed; null clears an override. */
export type LimitsChange = Partial<AccountLimits>;

export interface NewKey {
  account_id: string;
  name: string;
  environment: KeyEnvironment;
  residency: Residency;
  privacy_mode: PrivacyMode;
  allowed_models: string[] | null;
  allowed_ips: string[] | null;
  expires_at: string | null;
}

export type AdminFailure =
  /** The API answered with an error (the envelope's type and message when it sent one). */
  | { kind: 'api'; status: number; type: string | undefined; message: string; requestId: string | undefined }
  /** No answer: connection refused, DNS, TLS… */
  | { kind: 'unreachable'; url: string; reason: string }
  | { kind: 'timeout'; url: string; timeoutMs: number }
  /** A success status with a body that is not what the document describes. */
  | { kind: 'invalid_response'; status: number; reason: string; requestId: string | undefined };

export type AdminResult<T> = { ok: true; value: T } | { ok: false; failure: AdminFailure };

export interface AdminClientOptions {
  /** Base URL without a trailing slash. */
  baseUrl: string;
  token: string;
  timeoutMs: number;
}

export interface AdminClient {
  createAccount(account: NewAccount): Promise<AdminResult<Account>>;
  listAccounts(): Promise<AdminResult<ListOf<Account>>>;
  getAccount(id: string): Promise<AdminResult<Account>>;
  suspendAccount(id: string): Promise<AdminResult<Account>>;
  resumeAccount(id: string): Promise<AdminResult<Account>>;
  setAccountLimits(id: string, change: LimitsChange): Promise<AdminResult<Account>>;
  createKey(key: NewKey): Promise<AdminResult<CreatedApiKey>>;
  listKeys(accountId: string): Promise<AdminResult<ListOf<ApiKey>>>;
  revokeKey(id: string): Promise<AdminResult<ApiKey>>;
  /** Any call of the API, for commands whose routes have no method here; `check` vets the answer's shape. */
  request<T>(method: string, path: string, body: unknown, check: ShapeCheck): Promise<AdminResult<T>>;
}

/** Checks the shape enough to render it; returns a reason when it does not fit. */
export type ShapeCheck = (body: unknown) => string | undefined;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export const resource: ShapeCheck = (body) =>
  isRecord(body) && typeof body.id === 'string' ? undefined : 'expected an object with an "id"';

const createdKey: ShapeCheck = (body) =>
  resource(body) ?? (isRecord(body) && typeof body.key === 'string' ? undefined : 'expected the key value in "key"');

export const listOfResources: ShapeCheck = (body) => {
  if (!isRecord(body) || !Array.isArray(body.data)) return 'expected {"data":[…]}';
  return body.data.every((item) => resource(item) === undefined) ? undefined : 'expected every item to have an "id"';
};

export function segment(id: string): string {
  return encodeURIComponent(id);
}

/** The cause fetch wraps in its `TypeError: fetch failed`, e.g. ECONNREFUSED. */
function networkReason(error: unknown): string {
  const cause: unknown = error instanceof Error && error.cause !== undefined ? error.cause : error;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    const nested = cause instanceof AggregateError ? (cause.errors[0] as NodeJS.ErrnoException | undefined) : undefined;
    return code ?? nested?.code ?? cause.message;
  }
  return String(cause);
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
}

/** The public API's error envelope: `{"type":"error","error":{"type","message"},"request_id"}`. */
function apiFailure(status: number, statusText: string, body: unknown, headerRequestId: string | undefined) {
  const error = isRecord(body) && isRecord(body.error) ? body.error : undefined;
  const message = typeof error?.message === 'string' && error.message ? error.message : undefined;
  const requestId = isRecord(body) && typeof body.request_id === 'string' ? body.request_id : headerRequestId;
  return {
    kind: 'api' as const,
    status,
    type: typeof error?.type === 'string' ? error.type : undefined,
    message: message ?? `HTTP ${status}${statusText ? ` ${statusText}` : ''}`,
    requestId,
  };
}

export function createAdminClient(options: AdminClientOptions): AdminClient {
  async function call<T>(method: string, path: string, body: unknown, check: ShapeCheck): Promise<AdminResult<T>> {
    const url = `${options.baseUrl}${path}`;
    // One deadline for the whole exchange, body included.
    const signal = AbortSignal.timeout(options.timeoutMs);
    let status: number;
    let statusText: string;
    let requestId: string | undefined;
    let text: string;
    try {
      const response = await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${options.token}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        // A redirect could carry the token elsewhere; the Admin API never redirects.
        redirect: 'error',
      });
      status = response.status;
      statusText = response.statusText;
      requestId = response.headers.get('x-request-id') ?? undefined;
      text = await response.text();
    } catch (error) {
      const failure: AdminFailure = isTimeout(error)
        ? { kind: 'timeout', url, timeoutMs: options.timeoutMs }
        : { kind: 'unreachable', url, reason: networkReason(error) };
      return { ok: false, failure };
    }

    let parsed: unknown;
    let parseError: string | undefined;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parseError = 'the body is not JSON';
    }

    if (status < 200 || status > 299) {
      return { ok: false, failure: apiFailure(status, statusText, parsed, requestId) };
    }
    const reason = parseError ?? check(parsed);
    if (reason !== undefined) {
      return { ok: false, failure: { kind: 'invalid_response', status, reason, requestId } };
    }
    return { ok: true, value: parsed as T };
  }

  /** Every page of a list (the API answers 50 items a page unless asked for more), gathered into one. */
  async function allPages<T>(path: string): Promise<AdminResult<ListOf<T>>> {
    const data: T[] = [];
    let after = '';
    for (;;) {
      const separator = path.includes('?') ? '&' : '?';
      const cursor = after === '' ? '' : `${separator}after=${encodeURIComponent(after)}`;
      const page = await call<ListOf<T> & { next_after?: string | null }>(
        'GET',
        `${path}${cursor}`,
        undefined,
        listOfResources,
      );
      if (!page.ok) return page;
      data.push(...page.value.data);
      if (!page.value.next_after) return { ok: true, value: { data } };
      after = page.value.next_after;
    }
  }

  return {
    createAccount: (account) => call('POST', '/admin/v1/accounts', account, resource),
    listAccounts: () => allPages('/admin/v1/accounts'),
    getAccount: (id) => call('GET', `/admin/v1/accounts/${segment(id)}`, undefined, resource),
    suspendAccount: (id) => call('POST', `/admin/v1/accounts/${segment(id)}/suspend`, undefined, resource),
    resumeAccount: (id) => call('POST', `/admin/v1/accounts/${segment(id)}/resume`, undefined, resource),
    setAccountLimits: (id, change) => call('PATCH', `/admin/v1/accounts/${segment(id)}/limits`, change, resource),
    createKey: (key) => call('POST', '/admin/v1/keys', key, createdKey),
    listKeys: (accountId) => allPages(`/admin/v1/keys?account_id=${encodeURIComponent(accountId)}`),
    revokeKey: (id) => call('POST', `/admin/v1/keys/${segment(id)}/revoke`, undefined, resource),
    request: call,
  };
}
