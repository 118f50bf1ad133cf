import { createAdminClient as createApiClient } from '@gw/admin-api';
import type { Account, AdminResult, ApiKey, CreatedKey, LimitsChange, NewAccount, NewKey } from '@gw/admin-api';

/** gwctl's calls of the admin API, over the one typed client of @gw/admin-api. Failures are values, never thrown. */

export type {
  Account,
  AccountLimits,
  AdminFailure,
  AdminResult,
  ApiKey,
  CreatedKey as CreatedApiKey,
  Environment as KeyEnvironment,
  LimitsChange,
  PrivacyMode,
  Residency,
} from '@gw/admin-api';

export interface ListOf<T> {
  data: T[];
}

export interface AdminClientOptions {
  /** Base URL without a trailing slash. */
  baseUrl: string;
  token: string;
  timeoutMs: number;
}

export function createAdminClient(options: AdminClientOptions) {
  const api = createApiClient(options);

  /** Every page of a list (the API answers 50 items a page unless asked for more), gathered into one. */
  async function allPages<T>(
    page: (after: string | undefined) => Promise<AdminResult<{ data: T[]; next_after: string | null }>>,
  ): Promise<AdminResult<ListOf<T>>> {
    const data: T[] = [];
    let after: string | undefined;
    for (;;) {
      const listed = await page(after);
      if (!listed.ok) return listed;
      data.push(...listed.value.data);
      if (!listed.value.next_after) return { ok: true, value: { data } };
      after = listed.value.next_after;
    }
  }

  return {
    call: api.call,
    createAccount: (account: NewAccount): Promise<AdminResult<Account>> => api.call('createAccount', { body: account }),
    listAccounts: (): Promise<AdminResult<ListOf<Account>>> =>
      allPages((after) => api.call('listAccounts', { query: { after } })),
    getAccount: (id: string) => api.call('getAccount', { params: { id } }),
    suspendAccount: (id: string) => api.call('suspendAccount', { params: { id } }),
    resumeAccount: (id: string) => api.call('resumeAccount', { params: { id } }),
    setAccountLimits: (id: string, change: LimitsChange) =>
      api.call('setAccountLimits', { params: { id }, body: change }),
    createKey: (key: NewKey): Promise<AdminResult<CreatedKey>> => api.call('createKey', { body: key }),
    listKeys: (accountId: string): Promise<AdminResult<ListOf<ApiKey>>> =>
      allPages((after) => api.call('listKeys', { query: { account_id: accountId, after } })),
    revokeKey: (id: string) => api.call('revokeKey', { params: { id } }),
  };
}

export type AdminClient = ReturnType<typeof createAdminClient>;
