import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { AdminApiError } from './api';
import type { Account, AdminClient, CreatedAdminKey, Limits } from './api';
import { ConfirmDialog, ErrorNote, FieldError, ShownOnce, TableScroll, Timestamp } from './ui';
import type { Confirmation } from './ui';

const numericLimits = ['requests_per_minute', 'concurrency', 'monthly_tokens', 'hard_ceiling_tokens'] as const;

/** Every override at once: an empty box clears it (the plan's value), a number sets it. */
function LimitsForm(props: { client: AdminClient; account: Account; onSaved: (account: Account) => void }) {
  const initial = (value: number | null) => (value === null ? '' : String(value));
  const [values, setValues] = useState(
    Object.fromEntries(numericLimits.map((name) => [name, initial(props.account.limits[name])])),
  );
  const [overage, setOverage] = useState(String(props.account.limits.overage));
  const [error, setError] = useState<string>();
  const submit = (event: Event) => {
    event.preventDefault();
    const limits: Partial<Limits> = {
      overage: overage === 'null' ? null : overage === 'true',
    };
    for (const name of numericLimits) {
      const text = values[name]?.trim() ?? '';
      limits[name] = text === '' ? null : Number(text);
    }
    props.client.setLimits(props.account.id, limits).then(props.onSaved, (failure: Error) => setError(failure.message));
  };
  return (
    <form class="inline-form" onSubmit={submit} data-testid="limits-form">
      {numericLimits.map((name) => (
        <label key={name}>
          {name.replaceAll('_', ' ')}
          <input
            name={name}
            inputMode="numeric"
            placeholder="plan's value"
            value={values[name]}
            onInput={(event) => setValues({ ...values, [name]: event.currentTarget.value })}
          />
        </label>
      ))}
      <label>
        overage
        <select name="overage" value={overage} onChange={(event) => setOverage(event.currentTarget.value)}>
          <option value="null">plan's value</option>
          <option value="true">allowed</option>
          <option value="false">not allowed</option>
        </select>
      </label>
      <button type="submit">Save limits</button>
      <ErrorNote message={error} />
    </form>
  );
}

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

/** The operator's view: every account, and what only the operator may change. */
export function AccountsPage(props: { client: AdminClient; onOpen: (account: Account) => void }) {
  const { client } = props;
  const [accounts, setAccounts] = useState<Account[]>([]);
  const [error, setError] = useState<string>();
  const [name, setName] = useState('');
  const [plan, setPlan] = useState('');
  const [fieldError, setFieldError] = useState<{ field: string; message: string }>();
  const [panel, setPanel] = useState<Panel>();
  const [confirmation, setConfirmation] = useState<Confirmation>();
  const [adminKey, setAdminKey] = useState<CreatedAdminKey>();

  const load = () => client.listAccounts().then(setAccounts, (failure: Error) => setError(failure.message));
  useEffect(() => {
    void load();
  }, [client]);

  const replace = (changed: Account) => setAccounts(accounts.map((each) => (each.id === changed.id ? changed : each)));
  const create = (event: Event) => {
    event.preventDefault();
    setError(undefined);
    setFieldError(undefined);
    client.createAccount(name, plan).then(
      (created) => {
        setAccounts([...accounts, created]);
        setName('');
        setPlan('');
      },
      (failure: Error) => {
        if (failure instanceof AdminApiError && (failure.field === 'name' || failure.field === 'plan')) {
          setFieldError({ field: failure.field, message: failure.message });
        } else setError(failure.message);
      },
    );
  };
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
                <tr data-account-id={account.id}>
                  <td>
                    <a
                      href="#"
                      onClick={(event) => {
                        event.preventDefault();
                        props.onOpen(account);
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
                    <button type="button" onClick={() => askSuspend(account, account.status === 'active')}>
                      {account.status === 'active' ? 'Suspend' : 'Resume'}
                    </button>
                    <button type="button" onClick={() => setPanel({ kind: 'limits', accountId: account.id })}>
                      Limits
                    </button>
                    <button type="button" onClick={() => setPanel({ kind: 'admin-key', accountId: account.id })}>
                      Admin key
                    </button>
                  </td>
                </tr>
                {panel?.accountId === account.id ? (
                  <tr>
                    <td colSpan={6}>
                      {panel.kind === 'limits' ? (
                        <LimitsForm
                          client={client}
                          account={account}
                          onSaved={(saved) => {
                            replace(saved);
                            setPanel(undefined);
                          }}
                        />
                      ) : (
                        <AdminKeyForm
                          client={client}
                          account={account}
                          onCreated={(created) => {
                            setAdminKey(created);
                            setPanel(undefined);
                          }}
                        />
                      )}
                    </td>
                  </tr>
                ) : null}
              </Fragment>
            ))}
          </tbody>
        </table>
      </TableScroll>
      {confirmation ? <ConfirmDialog confirmation={confirmation} onClose={() => setConfirmation(undefined)} /> : null}
    </section>
  );
}
