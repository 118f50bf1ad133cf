import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { AdminApiError } from './api';
import type { Account, AdminClient, CreatedAdminKey } from './api';
import { AuditPanel } from './audit';
import { LimitsEditor } from './limits';
import { ConfirmDialog, ErrorNote, FieldError, ListStatus, ShownOnce, TableScroll, Timestamp } from './ui';
import type { Confirmation } from './ui';

function AdminKeyForm(props: { client: AdminClient; account: Account; onCreated: (key: CreatedAdminKey) => void }) {
  const [name, setName] = useState('');
  const [error, setError] = useState<string>();
  const submit = (event: Event) => {
    event.preventDefault();
    props.client.createAdminKey(props.account.id, name).then(props.onCreated, (failure: Error) => {
      setError(failure.message);
    });
  };
  return (
    <form class="inline-form" onSubmit={submit}>
      <label>
        admin key name
        <input name="admin-key-name" value={name} onInput={(event) => setName(event.currentTarget.value)} />
      </label>
      <button type="submit">Create admin key</button>
      <ErrorNote message={error} />
    </form>
  );
}

type Panel = { kind: 'limits' | 'admin-key'; accountId: string };

type AccountFilters = { q: string; status: string };

/** A new account: its name and plan; the API's refusal is shown beside the field it names. */
function CreateAccountForm(props: {
  client: AdminClient;
  onCreated: (account: Account) => void;
  onError: (message: string | undefined) => void;
}) {
  const [name, setName] = useState('');
  const [plan, setPlan] = useState('');
  const [fieldError, setFieldError] = useState<{ field: string; message: string }>();
  const create = (event: Event) => {
    event.preventDefault();
    props.onError(undefined);
    setFieldError(undefined);
    props.client.createAccount(name, plan).then(
      (created) => {
        props.onCreated(created);
        setName('');
        setPlan('');
      },
      (failure: Error) => {
        if (failure instanceof AdminApiError && (failure.field === 'name' || failure.field === 'plan')) {
          setFieldError({ field: failure.field, message: failure.message });
        } else props.onError(failure.message);
      },
    );
  };
  return (
    <form class="inline-form" onSubmit={create} data-testid="create-account">
      <label>
        name
        <input name="account-name" required value={name} onInput={(event) => setName(event.currentTarget.value)} />
        <FieldError error={fieldError} field="name" />
      </label>
      <label>
        plan
        <input name="account-plan" required value={plan} onInput={(event) => setPlan(event.currentTarget.value)} />
        <FieldError error={fieldError} field="plan" />
      </label>
      <button type="submit">Create account</button>
    </form>
  );
}

/** Search by name or id, and the status filter. */
function AccountsToolbar(props: { filters: AccountFilters; onFilters: (filters: AccountFilters) => void }) {
  const { filters } = props;
  const [search, setSearch] = useState('');
  return (
    <div class="toolbar">
      <form
        class="search"
        role="search"
        onSubmit={(event) => {
          event.preventDefault();
          props.onFilters({ ...filters, q: search.trim() });
        }}
      >
        <label>
          search
          <input
            name="account-search"
            type="search"
            placeholder="name or id"
            value={search}
            onInput={(event) => setSearch(event.currentTarget.value)}
          />
        </label>
        <button type="submit" class="secondary">
          Search
        </button>
      </form>
      <label>
        status
        <select
          name="account-status-filter"
          value={filters.status}
          onChange={(event) => props.onFilters({ ...filters, status: event.currentTarget.value })}
        >
          <option value="">all</option>
          <option value="active">active</option>
          <option value="suspended">suspended</option>
        </select>
      </label>
    </div>
  );
}

/** One account, with the operator's actions on it. */
function AccountRow(props: {
  account: Account;
  onOpen: () => void;
  onSuspend: () => void;
  onPanel: (kind: Panel['kind']) => void;
}) {
  const { account } = props;
  return (
    <tr data-account-id={account.id}>
      <td class="name">
        <a
          href="#"
          onClick={(event) => {
            event.preventDefault();
            props.onOpen();
          }}
        >
          {account.name}
        </a>
      </td>
      <td>
        <code>{account.id}</code>
      </td>
      <td>{account.plan}</td>
      <td class={`status ${account.status}`}>{account.status}</td>
      <td>
        <Timestamp iso={account.created_at} />
      </td>
      <td class="actions">
        <button type="button" onClick={props.onSuspend}>
          {account.status === 'active' ? 'Suspend' : 'Resume'}
        </button>
        <button type="button" onClick={() => props.onPanel('limits')}>
          Limits
        </button>
        <button type="button" onClick={() => props.onPanel('admin-key')}>
          Admin key
        </button>
      </td>
    </tr>
  );
}

/** Below an account's row: its limits editor, or the form of a new admin key. */
function AccountPanel(props: {
  client: AdminClient;
  account: Account;
  kind: Panel['kind'];
  onSaved: (account: Account) => void;
  onAdminKey: (key: CreatedAdminKey) => void;
}) {
  return (
    <tr>
      <td colSpan={6}>
        {props.kind === 'limits' ? (
          <LimitsEditor client={props.client} account={props.account} onSaved={props.onSaved} />
        ) : (
          <AdminKeyForm client={props.client} account={props.account} onCreated={props.onAdminKey} />
        )}
      </td>
    </tr>
  );
}

/** The accounts matching the filters, a page at a time: loaded again when the filters change. */
function useAccountPages(client: AdminClient, filters: AccountFilters, setError: (message?: string) => void) {
  const [accounts, setAccounts] = useState<Account[]>([]);
  const [nextAfter, setNextAfter] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const load = (after = '') => {
    setLoading(true);
    return client.searchAccounts({ ...filters, after }).then(
      (page) => {
        setError(undefined);
        setAccounts(after === '' ? page.data : [...accounts, ...page.data]);
        setNextAfter(page.next_after);
        setLoading(false);
      },
      (failure: Error) => {
        setError(failure.message);
        setLoading(false);
      },
    );
  };
  useEffect(() => {
    void load();
  }, [client, filters]);
  return { accounts, setAccounts, nextAfter, loading, load };
}

/** The operator's view: every account, and what only the operator may change. */
export function AccountsPage(props: { client: AdminClient; onOpen: (account: Account) => void }) {
  const { client } = props;
  const [error, setError] = useState<string>();
  const [panel, setPanel] = useState<Panel>();
  const [confirmation, setConfirmation] = useState<Confirmation>();
  const [adminKey, setAdminKey] = useState<CreatedAdminKey>();
  const [showAudit, setShowAudit] = useState(false);

  const [filters, setFilters] = useState<AccountFilters>({ q: '', status: '' });
  const { accounts, setAccounts, nextAfter, loading, load } = useAccountPages(client, filters, setError);

  const replace = (changed: Account) => setAccounts(accounts.map((each) => (each.id === changed.id ? changed : each)));
  const askSuspend = (account: Account, suspended: boolean) =>
    setConfirmation({
      message: suspended
        ? `Suspend ${account.name}? Every request of its keys is refused until it is resumed.`
        : `Resume ${account.name}? Its keys work again.`,
      action: suspended ? 'Suspend' : 'Resume',
      run: () => client.setSuspended(account.id, suspended).then(replace),
    });

  return (
    <section>
      <h2>Accounts</h2>
      <button type="button" class="secondary" aria-expanded={showAudit} onClick={() => setShowAudit(!showAudit)}>
        Audit log of every account
      </button>
      {showAudit ? <AuditPanel client={client} accountId="" /> : null}
      <CreateAccountForm
        client={client}
        onCreated={(created) => setAccounts([created, ...accounts])}
        onError={setError}
      />
      <AccountsToolbar filters={filters} onFilters={setFilters} />
      <ErrorNote message={error} />
      {adminKey ? (
        <ShownOnce
          title={`Admin key ${adminKey.name} (${adminKey.display_prefix}…)`}
          value={adminKey.key}
          note="It can manage this account only: its keys and its usage."
          onDismiss={() => setAdminKey(undefined)}
        />
      ) : null}
      <TableScroll label="accounts">
        <table data-testid="accounts">
          <thead>
            <tr>
              <th>name</th>
              <th>id</th>
              <th>plan</th>
              <th>status</th>
              <th>created</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {accounts.map((account) => (
              <Fragment key={account.id}>
                <AccountRow
                  account={account}
                  onOpen={() => props.onOpen(account)}
                  onSuspend={() => askSuspend(account, account.status === 'active')}
                  onPanel={(kind) => setPanel({ kind, accountId: account.id })}
                />
                {panel?.accountId === account.id ? (
                  <AccountPanel
                    client={client}
                    account={account}
                    kind={panel.kind}
                    onSaved={(saved) => {
                      replace(saved);
                      setPanel(undefined);
                    }}
                    onAdminKey={(created) => {
                      setAdminKey(created);
                      setPanel(undefined);
                    }}
                  />
                ) : null}
              </Fragment>
            ))}
          </tbody>
        </table>
      </TableScroll>
      <ListStatus loading={loading} error={error} empty={accounts.length === 0} emptyText="No accounts match." />
      {nextAfter && !loading ? (
        <button type="button" class="secondary" onClick={() => void load(nextAfter)}>
          Load more
        </button>
      ) : null}
      {confirmation ? <ConfirmDialog confirmation={confirmation} onClose={() => setConfirmation(undefined)} /> : null}
    </section>
  );
}
