/** The admin API of docs/admin-api.md, called with the credential the session holds in memory, over the one typed client. */
// The client module alone: the package's index holds the routes' schemas, which the page need not bundle.
import { createAdminClient } from '@gw/admin-api/dist/client';
import type {
  AccountLimits,
  AdminFailure,
  AdminResult,
  AuditEntry as DeclaredAuditEntry,
  Environment,
  KeyChanges,
  KeyStatus,
} from '@gw/admin-api';

export type {
  Account,
  AccountUsage,
  AdminKey,
  ApiKey as Key,
  CreatedAdminKey,
  Environment,
  KeyChanges,
  KeyStatus,
  LimitsInForce as LimitsView,
  NewKey,
  PrivacyMode,
  Residency,
  RotatedKey,
} from '@gw/admin-api';

export type Limits = AccountLimits;
export type AuditEntry = DeclaredAuditEntry;

/** A key as its creation or rotation answers it: the only time the value is seen. */
export type CreatedKey = import('@gw/admin-api').CreatedKey & { replaces?: string };

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

/** A failure of the one client as the dashboard shows it: an error naming the field its message names. */
function apiError(failure: AdminFailure): AdminApiError {
  if (failure.kind !== 'api') {
    const status = failure.kind === 'invalid_response' ? failure.status : 0;
    return new AdminApiError(
      status,
      'api_error',
      'The admin API could not be reached or gave no usable answer.',
      undefined,
    );
  }
  const message = failure.type === undefined ? `The admin API answered ${failure.status}.` : failure.message;
  return new AdminApiError(failure.status, failure.type ?? 'api_error', readableMessage(message), fieldOf(message));
}

/** An answer's value, or the failure thrown as an AdminApiError. */
export const value = <T>(result: AdminResult<T>): T => {
  if (!result.ok) throw apiError(result.failure);
  return result.value;
};

/** `''` is no filter: left out of the query. */
const present = (text: string) => (text === '' ? undefined : text);

export class AdminClient {
  readonly api: ReturnType<typeof createAdminClient>;

  constructor(
    credential: string,
    /** Told of every call, so that the session's idle clock counts the user's actions. */
    onCall: (status: number) => void,
  ) {
    this.api = createAdminClient({
      baseUrl: '',
      token: credential,
      fetchOptions: { cache: 'no-store', credentials: 'omit' },
      onAnswer: onCall,
    });
  }

  listAccounts = async () => value(await this.api.call('listAccounts', {})).data;
  searchAccounts = async (parameters: { q: string; status: string; after: string }) =>
    value(
      await this.api.call('listAccounts', {
        query: { q: present(parameters.q), status: present(parameters.status), after: present(parameters.after) },
      }),
    );
  createAccount = async (name: string, plan: string) =>
    value(await this.api.call('createAccount', { body: { name, plan } }));
  setSuspended = async (id: string, suspended: boolean) =>
    value(await this.api.call(suspended ? 'suspendAccount' : 'resumeAccount', { params: { id } }));
  setLimits = async (id: string, limits: Partial<Limits>) =>
    value(await this.api.call('setAccountLimits', { params: { id }, body: limits }));
  createAdminKey = async (id: string, name: string, expiresAt: string | null = null) =>
    value(await this.api.call('createAdminKey', { params: { id }, body: { name, expires_at: expiresAt } }));
  listAdminKeys = async (id: string, after = '') =>
    value(await this.api.call('listAdminKeys', { params: { id }, query: { after: present(after) } }));
  revokeAdminKey = async (id: string) => value(await this.api.call('revokeAdminKey', { params: { id } }));
  limits = async (id: string) => value(await this.api.call('getAccountLimits', { params: { id } }));
  audit = async (accountId: string, action: string, before: number | null) =>
    value(
      await this.api.call('listAudit', {
        query: {
          account_id: present(accountId),
          action: present(action),
          before: before === null ? undefined : String(before),
        },
      }),
    );
  updateKey = async (id: string, changes: KeyChanges) =>
    value(await this.api.call('updateKey', { params: { id }, body: changes }));
  usage = async (id: string, environment: Environment) =>
    value(await this.api.call('getAccountUsage', { params: { id }, query: { environment } }));
  listKeys = async (accountId: string, parameters: KeyQuery) =>
    value(
      await this.api.call('listKeys', {
        query: {
          account_id: accountId,
          q: present(parameters.q),
          status: present(parameters.status),
          environment: present(parameters.environment) as Environment | undefined,
          after: present(parameters.after),
        },
      }),
    );
  createKey = async (key: import('@gw/admin-api').NewKey): Promise<CreatedKey> =>
    value(await this.api.call('createKey', { body: key }));
  rotateKey = async (id: string): Promise<CreatedKey> => value(await this.api.call('rotateKey', { params: { id } }));
  revokeKey = async (id: string) => value(await this.api.call('revokeKey', { params: { id } }));
}
