import { useEffect, useState } from 'preact/hooks';
import type { AdminClient, AdminKey, CreatedAdminKey } from './api';
import { ConfirmDialog, ErrorNote, ListStatus, ShownOnce, TableScroll, Timestamp } from './ui';
import type { Confirmation } from './ui';

/** Creation is the operator's: a name and an optional expiry; the value is shown once. */
function CreateAdminKeyForm(props: {
  client: AdminClient;
  accountId: string;
  onCreated: (key: CreatedAdminKey) => void;
}) {
  const [name, setName] = useState('');
  const [expires, setExpires] = useState('');
  const [error, setError] = useState<string>();
  const submit = (event: Event) => {
    event.preventDefault();
    setError(undefined);
    const expiresAt = expires === '' ? null : new Date(expires).toISOString();
    props.client.createAdminKey(props.accountId, name, expiresAt).then(
      (created) => {
        setName('');
        setExpires('');
        props.onCreated(created);
      },
      (failure: Error) => setError(failure.message),
    );
  };
  return (
    <form class="inline-form" onSubmit={submit} data-testid="create-admin-key">
      <label>
        admin key name
        <input name="admin-key-name" required value={name} onInput={(event) => setName(event.currentTarget.value)} />
      </label>
      <label>
        expires
        <input
          name="admin-key-expires"
          type="datetime-local"
          value={expires}
          onInput={(event) => setExpires(event.currentTarget.value)}
        />
      </label>
      <button type="submit">Create admin key</button>
      <ErrorNote message={error} />
    </form>
  );
}

/** The admin keys of an account, one row each, with a revoke button for those still usable. */
function AdminKeysTable(props: { keys: AdminKey[]; onRevoke: (key: AdminKey) => void }) {
  return (
    <TableScroll label="admin keys">
      <table data-testid="admin-keys-table">
        <thead>
          <tr>
            <th>name</th>
            <th>prefix</th>
            <th>status</th>
            <th>expires</th>
            <th>last used</th>
            <th>created</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {props.keys.map((key) => (
            <tr key={key.id} data-admin-key-id={key.id}>
              <td class="name">{key.name}</td>
              <td>
                <code>{key.display_prefix}…</code>
              </td>
              <td class={`status ${key.status}`} data-testid="admin-key-status">
                {key.status}
              </td>
              <td>
                <Timestamp iso={key.expires_at} none="never" />
              </td>
              <td>
                <Timestamp iso={key.last_used_at} />
              </td>
              <td>
                <Timestamp iso={key.created_at} />
              </td>
              <td class="actions">
                {key.status === 'revoked' ? null : (
                  <button type="button" class="danger" onClick={() => props.onRevoke(key)}>
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

/** An account's admin keys: who can manage it, when each was last used, revocation at once. */
export function AdminKeysPanel(props: {
  client: AdminClient;
  accountId: string;
  operator: boolean;
  onSecretPending: (pending: boolean) => void;
}) {
  const { client, accountId } = props;
  const [keys, setKeys] = useState<AdminKey[]>([]);
  const [nextAfter, setNextAfter] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string>();
  const [shown, setShown] = useState<CreatedAdminKey>();
  const [confirmation, setConfirmation] = useState<Confirmation>();

  const load = (after = '') => {
    setLoading(true);
    return client.listAdminKeys(accountId, after).then(
      (page) => {
        setError(undefined);
        setKeys(after === '' ? page.data : [...keys, ...page.data]);
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
  }, [client, accountId]);
  useEffect(() => props.onSecretPending(shown !== undefined), [shown]);

  const askRevoke = (key: AdminKey) =>
    setConfirmation({
      message: `Revoke admin key "${key.name}" (${key.display_prefix}…)? It is refused from its next request; this cannot be undone.`,
      action: 'Revoke',
      run: () => client.revokeAdminKey(key.id).then(() => load()),
    });

  return (
    <div data-testid="admin-keys">
      {shown ? (
        <ShownOnce
          title={`Admin key ${shown.name} (${shown.display_prefix}…)`}
          value={shown.key}
          note="It can manage this account only: its keys, its limits (read), its usage and its audit log."
          onDismiss={() => setShown(undefined)}
        />
      ) : null}
      <ErrorNote message={error} />
      <AdminKeysTable keys={keys} onRevoke={askRevoke} />
      <ListStatus loading={loading} error={error} empty={keys.length === 0} emptyText="No admin keys." />
      {nextAfter && !loading ? (
        <button type="button" class="secondary" onClick={() => void load(nextAfter)}>
          Load more
        </button>
      ) : null}
      {props.operator ? (
        <CreateAdminKeyForm
          client={client}
          accountId={accountId}
          onCreated={(created) => {
            setShown(created);
            void load();
          }}
        />
      ) : null}
      {confirmation ? <ConfirmDialog confirmation={confirmation} onClose={() => setConfirmation(undefined)} /> : null}
    </div>
  );
}
