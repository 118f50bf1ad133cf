import { Fragment } from 'preact';
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { KeyEnvironment, keyEnvironments, PrivacyMode, privacyModes, ResidencyTier } from '@gw/vocabulary';
import { AdminApiError } from './api';
import type { AdminClient, CreatedKey, Environment, Key, KeyStatus, NewKey, Residency } from './api';
import { ConfirmDialog, ErrorNote, FieldError, ListStatus, ShownOnce, TableScroll, Timestamp } from './ui';
import type { Confirmation } from './ui';

type SortColumn = 'name' | 'environment' | 'status' | 'expires_at' | 'created_at' | 'last_used_at';

const columns: { column: SortColumn; label: string }[] = [
  { column: 'name', label: 'name' },
  { column: 'environment', label: 'environment' },
  { column: 'status', label: 'status' },
  { column: 'expires_at', label: 'expires' },
  { column: 'created_at', label: 'created' },
  { column: 'last_used_at', label: 'last used' },
];

/** Text fields of the form, written as the API wants them; lists are comma- or space-separated. */
interface KeyForm {
  name: string;
  environment: Environment;
  residency: Residency;
  privacy_mode: PrivacyMode;
  allowed_models: string;
  allowed_ips: string;
  /** A datetime-local value, in the browser's zone. */
  expires_at: string;
}

const emptyForm: KeyForm = {
  name: '',
  environment: KeyEnvironment.live,
  residency: ResidencyTier.eu,
  privacy_mode: PrivacyMode.off,
  allowed_models: '',
  allowed_ips: '',
  expires_at: '',
};

const listOrNull = (text: string) => {
  const entries = text.split(/[\s,]+/).filter((entry) => entry !== '');
  return entries.length === 0 ? null : entries;
};

function newKeyOf(accountId: string, form: KeyForm): NewKey {
  return {
    account_id: accountId,
    name: form.name,
    environment: form.environment,
    residency: form.residency,
    privacy_mode: form.privacy_mode,
    allowed_models: listOrNull(form.allowed_models),
    allowed_ips: listOrNull(form.allowed_ips),
    expires_at: form.expires_at === '' ? null : new Date(form.expires_at).toISOString(),
  };
}

function Choice<T extends string>(props: {
  name: string;
  value: T;
  options: readonly T[];
  onChange: (value: T) => void;
}) {
  return (
    <select name={props.name} value={props.value} onChange={(event) => props.onChange(event.currentTarget.value as T)}>
      {props.options.map((option) => (
        <option key={option} value={option}>
          {option}
        </option>
      ))}
    </select>
  );
}

type SetField = <F extends keyof KeyForm>(field: F, value: KeyForm[F]) => void;

/** A new key's restrictions: the models and addresses it may use, and when it expires. */
function KeyRestrictionFields(props: {
  form: KeyForm;
  set: SetField;
  besideField: (field: keyof KeyForm) => ComponentChildren;
}) {
  const { form, set, besideField } = props;
  return (
    <Fragment>
      <label>
        allowed models
        <input
          name="allowed_models"
          placeholder="every model of the plan"
          value={form.allowed_models}
          onInput={(event) => set('allowed_models', event.currentTarget.value)}
        />
        {besideField('allowed_models')}
      </label>
      <label>
        allowed addresses
        <input
          name="allowed_ips"
          placeholder="any address; e.g. 192.0.2.0/24, 2001:db8::7"
          value={form.allowed_ips}
          onInput={(event) => set('allowed_ips', event.currentTarget.value)}
        />
        {besideField('allowed_ips')}
      </label>
      <label>
        expires
        <input
          name="expires_at"
          type="datetime-local"
          value={form.expires_at}
          onInput={(event) => set('expires_at', event.currentTarget.value)}
        />
        {besideField('expires_at')}
      </label>
    </Fragment>
  );
}

/** Key creation with every attribute; the API's refusal is shown beside the field it names. */
function CreateKeyForm(props: {
  client: AdminClient;
  accountId: string;
  /** The residency tiers the account's plan permits; the menu offers only these. */
  residencies: readonly Residency[];
  onCreated: (key: CreatedKey) => void;
}) {
  const [form, setForm] = useState(emptyForm);
  useEffect(() => {
    if (!props.residencies.includes(form.residency))
      setForm({ ...form, residency: props.residencies[0] ?? ResidencyTier.eu });
  }, [props.residencies]);
  const [fieldError, setFieldError] = useState<{ field: string; message: string }>();
  const [error, setError] = useState<string>();
  const set: SetField = (field, value) => setForm({ ...form, [field]: value });
  const besideField = (field: keyof KeyForm) => <FieldError error={fieldError} field={field} />;
  const submit = (event: Event) => {
    event.preventDefault();
    setFieldError(undefined);
    setError(undefined);
    props.client.createKey(newKeyOf(props.accountId, form)).then(
      (created) => {
        setForm(emptyForm);
        props.onCreated(created);
      },
      (failure: Error) => {
        if (failure instanceof AdminApiError && failure.field !== undefined && failure.field in emptyForm) {
          setFieldError({ field: failure.field, message: failure.message });
        } else setError(failure.message);
      },
    );
  };
  return (
    <form class="key-form" onSubmit={submit} data-testid="create-key">
      <h3>New key</h3>
      <label>
        name
        <input name="name" required value={form.name} onInput={(event) => set('name', event.currentTarget.value)} />
        {besideField('name')}
      </label>
      <label>
        environment
        <Choice
          name="environment"
          value={form.environment}
          options={keyEnvironments}
          onChange={(value) => set('environment', value)}
        />
        {besideField('environment')}
      </label>
      <label>
        residency
        <Choice
          name="residency"
          value={form.residency}
          options={props.residencies}
          onChange={(value) => set('residency', value)}
        />
        {besideField('residency')}
      </label>
      <label>
        privacy mode
        <Choice
          name="privacy_mode"
          value={form.privacy_mode}
          options={privacyModes}
          onChange={(value) => set('privacy_mode', value)}
        />
        {besideField('privacy_mode')}
      </label>
      <KeyRestrictionFields form={form} set={set} besideField={besideField} />
      <button type="submit">Create key</button>
      <ErrorNote message={error} />
    </form>
  );
}

const compareKeys = (column: SortColumn) => (left: Key, right: Key) =>
  (left[column] ?? '').localeCompare(right[column] ?? '');

/** A key's name and restrictions, changed in place; the rest of it stays. */
function EditKeyForm(props: { client: AdminClient; apiKey: Key; onDone: (changed: boolean) => void }) {
  const { apiKey } = props;
  const [name, setName] = useState(apiKey.name);
  const [models, setModels] = useState(apiKey.allowed_models?.join(', ') ?? '');
  const [addresses, setAddresses] = useState(apiKey.allowed_ips?.join(', ') ?? '');
  const [fieldError, setFieldError] = useState<{ field: string; message: string }>();
  const [error, setError] = useState<string>();
  const submit = (event: Event) => {
    event.preventDefault();
    setFieldError(undefined);
    setError(undefined);
    props.client
      .updateKey(apiKey.id, { name, allowed_models: listOrNull(models), allowed_ips: listOrNull(addresses) })
      .then(
        () => props.onDone(true),
        (failure: Error) => {
          if (failure instanceof AdminApiError && failure.field !== undefined) {
            setFieldError({ field: failure.field, message: failure.message });
          } else setError(failure.message);
        },
      );
  };
  return (
    <form class="inline-form" onSubmit={submit} data-testid="edit-key">
      <label>
        name
        <input name="edit-name" required value={name} onInput={(event) => setName(event.currentTarget.value)} />
        <FieldError error={fieldError} field="name" />
      </label>
      <label>
        allowed models
        <input
          name="edit-allowed-models"
          placeholder="every model of the plan"
          value={models}
          onInput={(event) => setModels(event.currentTarget.value)}
        />
        <FieldError error={fieldError} field="allowed_models" />
      </label>
      <label>
        allowed addresses
        <input
          name="edit-allowed-ips"
          placeholder="any address"
          value={addresses}
          onInput={(event) => setAddresses(event.currentTarget.value)}
        />
        <FieldError error={fieldError} field="allowed_ips" />
      </label>
      <button type="submit">Save</button>
      <button type="button" class="secondary" onClick={() => props.onDone(false)}>
        Cancel
      </button>
      <ErrorNote message={error} />
    </form>
  );
}

interface Filters {
  q: string;
  status: KeyStatus | '';
  environment: Environment | '';
}

type Sort = { column: SortColumn; descending: boolean };

/** Search, the status and environment filters, and a refresh. */
function KeysToolbar(props: { filters: Filters; onFilters: (filters: Filters) => void; onRefresh: () => void }) {
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
            name="key-search"
            type="search"
            placeholder="name, id or prefix"
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
        <Choice
          name="status-filter"
          value={filters.status === '' ? 'all' : filters.status}
          options={['all', 'active', 'revoked', 'expired']}
          onChange={(value) => props.onFilters({ ...filters, status: value === 'all' ? '' : value })}
        />
      </label>
      <label>
        environment
        <Choice
          name="environment-filter"
          value={filters.environment === '' ? 'all' : filters.environment}
          options={['all', ...keyEnvironments]}
          onChange={(value) => props.onFilters({ ...filters, environment: value === 'all' ? '' : value })}
        />
      </label>
      <button type="button" class="secondary" onClick={props.onRefresh}>
        Refresh
      </button>
    </div>
  );
}

/** One key: its attributes and the actions its status allows. */
function KeyRow(props: {
  apiKey: Key;
  prefixOf: (id: string) => string | undefined;
  onEdit: () => void;
  onRotate: () => void;
  onRevoke: () => void;
}) {
  const key = props.apiKey;
  return (
    <tr data-key-id={key.id} class={key.status}>
      <td class="name">
        {key.name}
        {key.replaces_key_id ? (
          <span class="muted replaces" data-testid="replaces">
            replaces <code>{props.prefixOf(key.replaces_key_id) ?? key.replaces_key_id}</code>
          </span>
        ) : null}
      </td>
      <td>{key.environment}</td>
      <td class={`status ${key.status}`} data-testid="key-status">
        {key.status}
        {key.revoked_at ? <Timestamp iso={key.revoked_at} /> : null}
      </td>
      <td>
        <Timestamp iso={key.expires_at} none="never" />
      </td>
      <td>
        <Timestamp iso={key.created_at} />
      </td>
      <td data-testid="last-used">
        <Timestamp iso={key.last_used_at} />
      </td>
      <td>
        <code>{key.display_prefix}…</code>
      </td>
      <td>{key.residency}</td>
      <td>{key.privacy_mode}</td>
      <td class="list">{key.allowed_models?.join(', ') ?? <span class="muted">all</span>}</td>
      <td class="list">{key.allowed_ips?.join(', ') ?? <span class="muted">any</span>}</td>
      <td class="actions">
        {key.status === 'revoked' ? null : (
          <button type="button" class="secondary" onClick={props.onEdit}>
            Edit
          </button>
        )}
        {key.status === 'active' ? (
          <button type="button" onClick={props.onRotate}>
            Rotate
          </button>
        ) : null}
        {key.status === 'revoked' ? null : (
          <button type="button" class="danger" onClick={props.onRevoke}>
            Revoke
          </button>
        )}
      </td>
    </tr>
  );
}

/** The keys, sortable by column, each with its actions and, when edited, its form below it. */
function KeysTable(props: {
  client: AdminClient;
  keys: Key[];
  sort: Sort;
  onSort: (sort: Sort) => void;
  prefixOf: (id: string) => string | undefined;
  editing: string | undefined;
  onEdit: (keyId: string | undefined) => void;
  onRotate: (key: Key) => void;
  onRevoke: (key: Key) => void;
  onChanged: () => void;
}) {
  const { sort } = props;
  return (
    <TableScroll label="keys">
      <table data-testid="keys">
        <thead>
          <tr>
            {columns.map(({ column, label }) => (
              <th
                key={column}
                aria-sort={sort.column === column ? (sort.descending ? 'descending' : 'ascending') : 'none'}
              >
                <button
                  type="button"
                  class="sort"
                  onClick={() =>
                    props.onSort({ column, descending: sort.column === column ? !sort.descending : false })
                  }
                >
                  {label}
                  {sort.column === column ? (sort.descending ? ' ▼' : ' ▲') : ''}
                </button>
              </th>
            ))}
            <th>prefix</th>
            <th>residency</th>
            <th>privacy</th>
            <th>models</th>
            <th>addresses</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {props.keys.map((key) => (
            <Fragment key={key.id}>
              <KeyRow
                apiKey={key}
                prefixOf={props.prefixOf}
                onEdit={() => props.onEdit(key.id)}
                onRotate={() => props.onRotate(key)}
                onRevoke={() => props.onRevoke(key)}
              />
              {props.editing === key.id ? (
                <tr>
                  <td colSpan={12}>
                    <EditKeyForm
                      client={props.client}
                      apiKey={key}
                      onDone={(changed) => {
                        props.onEdit(undefined);
                        if (changed) props.onChanged();
                      }}
                    />
                  </td>
                </tr>
              ) : null}
            </Fragment>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

/** A key just created or rotated, shown once with what to do with it. */
function ShownKey(props: { shown: { key: CreatedKey; note: string } | undefined; onDismiss: () => void }) {
  const { shown } = props;
  return shown ? (
    <ShownOnce
      title={`Key ${shown.key.name} (${shown.key.display_prefix}…)`}
      value={shown.key.key}
      note={shown.note}
      onDismiss={props.onDismiss}
    />
  ) : null;
}

/** An account's keys: searched, filtered and paged by the API; created, edited, rotated and revoked here. */
export function KeysPanel(props: {
  client: AdminClient;
  accountId: string;
  residencies: readonly Residency[] | undefined;
  onSecretPending: (pending: boolean) => void;
}) {
  const { client, accountId } = props;
  const [keys, setKeys] = useState<Key[]>([]);
  const [nextAfter, setNextAfter] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string>();
  const [filters, setFilters] = useState<Filters>({ q: '', status: '', environment: '' });
  const [sort, setSort] = useState<Sort>({
    column: 'created_at',
    descending: true,
  });
  const [shown, setShown] = useState<{ key: CreatedKey; note: string }>();
  const [editing, setEditing] = useState<string>();
  const [confirmation, setConfirmation] = useState<Confirmation>();

  const load = (after = '') => {
    setLoading(true);
    return client.listKeys(accountId, { ...filters, after }).then(
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
  }, [client, accountId, filters]);
  useEffect(() => props.onSecretPending(shown !== undefined), [shown]);

  const visible = [...keys].sort(compareKeys(sort.column));
  if (sort.descending) visible.reverse();
  const prefixOf = (id: string) => keys.find((key) => key.id === id)?.display_prefix;

  const rotate = (key: Key) =>
    client.rotateKey(key.id).then(
      (created) => {
        setShown({
          key: created,
          note: `This key replaces ${key.name} (${key.display_prefix}…), with the same settings. Both keys work until you revoke the old one: move your callers over, then revoke ${key.display_prefix}….`,
        });
        return load();
      },
      (failure: Error) => setError(failure.message),
    );
  const askRevoke = (key: Key) =>
    setConfirmation({
      message: `Revoke key "${key.name}" (${key.display_prefix}…)? Requests with it are refused from now on; this cannot be undone.`,
      action: 'Revoke',
      run: () => client.revokeKey(key.id).then(() => load()),
    });

  return (
    <div>
      <ShownKey shown={shown} onDismiss={() => setShown(undefined)} />
      <KeysToolbar filters={filters} onFilters={setFilters} onRefresh={() => void load()} />
      <ErrorNote message={error} />
      <KeysTable
        client={client}
        keys={visible}
        sort={sort}
        onSort={setSort}
        prefixOf={prefixOf}
        editing={editing}
        onEdit={setEditing}
        onRotate={(key) => void rotate(key)}
        onRevoke={askRevoke}
        onChanged={() => void load()}
      />
      <ListStatus loading={loading} error={error} empty={visible.length === 0} emptyText="No keys match." />
      {nextAfter && !loading ? (
        <button type="button" class="secondary" onClick={() => void load(nextAfter)}>
          Load more
        </button>
      ) : null}
      <CreateKeyForm
        client={client}
        accountId={accountId}
        residencies={props.residencies ?? [ResidencyTier.eu, ResidencyTier.uk]}
        onCreated={(created) => {
          setShown({ key: created, note: 'Give it to the caller now; the table shows only its prefix.' });
          void load();
        }}
      />
      {confirmation ? <ConfirmDialog confirmation={confirmation} onClose={() => setConfirmation(undefined)} /> : null}
    </div>
  );
}
