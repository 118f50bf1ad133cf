import { useEffect, useState } from 'preact/hooks';
import type { AdminClient, AuditEntry } from './api';
import { ErrorNote, ListStatus, TableScroll, Timestamp } from './ui';

const actions = [
  ['', 'every action'],
  ['key.', 'keys'],
  ['key.rotate', 'key rotations'],
  ['admin_key.', 'admin keys'],
  ['account.', 'account changes'],
  ['admin_credential.refused', 'refused credentials'],
] as const;

const shown = (value: unknown) => (value === undefined ? '–' : JSON.stringify(value));

/** The fields a change touched, before and after; a creation shows what was made. */
function Change({ before, after }: { before: unknown; after: unknown }) {
  const asRecord = (value: unknown) =>
    typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  const was = asRecord(before);
  const now = asRecord(after);
  const fields = [...new Set([...Object.keys(was), ...Object.keys(now)])].filter(
    (field) => JSON.stringify(was[field]) !== JSON.stringify(now[field]),
  );
  if (fields.length === 0) return <span class="muted">no change</span>;
  return (
    <dl class="change" data-testid="audit-change">
      {fields.map((field) => (
        <div key={field}>
          <dt>{field}</dt>
          <dd>
            <span class="before" data-testid="before">
              {shown(was[field])}
            </span>{' '}
            →{' '}
            <span class="after" data-testid="after">
              {shown(now[field])}
            </span>
          </dd>
        </div>
      ))}
    </dl>
  );
}

const actorOf = (entry: AuditEntry) =>
  entry.actor.kind === 'admin_key'
    ? `admin key ${entry.actor.id ?? ''}`
    : entry.actor.kind === 'operator'
      ? 'operator'
      : 'unknown credential';

/** Who changed what in the account (every account for the operator, when none is given), when and from where. */
export function AuditPanel(props: { client: AdminClient; accountId: string }) {
  const [action, setAction] = useState('');
  const [entries, setEntries] = useState<AuditEntry[]>([]);
  const [nextBefore, setNextBefore] = useState<number | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string>();
  const load = (before: number | null) => {
    setLoading(true);
    return props.client.audit(props.accountId, action, before).then(
      (page) => {
        setError(undefined);
        setEntries(before === null ? page.data : [...entries, ...page.data]);
        setNextBefore(page.next_before);
        setLoading(false);
      },
      (failure: Error) => {
        setError(failure.message);
        setLoading(false);
      },
    );
  };
  useEffect(() => {
    void load(null);
  }, [props.client, props.accountId, action]);
  return (
    <div data-testid="audit">
      <div class="toolbar">
        <label>
          action
          <select name="audit-action" value={action} onChange={(event) => setAction(event.currentTarget.value)}>
            {actions.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <button type="button" class="secondary" onClick={() => void load(null)}>
          Refresh
        </button>
      </div>
      <ErrorNote message={error} />
      <TableScroll label="audit log">
        <table data-testid="audit-table">
          <thead>
            <tr>
              <th>when</th>
              <th>who</th>
              <th>action</th>
              {props.accountId === '' ? <th>account</th> : null}
              <th>target</th>
              <th>from</th>
              <th>change</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((entry) => (
              <tr key={entry.seq} data-audit-seq={entry.seq} data-action={entry.action}>
                <td>
                  <Timestamp iso={entry.at} />
                </td>
                <td class="name">{actorOf(entry)}</td>
                <td>{entry.action}</td>
                {props.accountId === '' ? (
                  <td>
                    <code>{entry.account_id ?? '–'}</code>
                  </td>
                ) : null}
                <td>
                  <code>{entry.target?.id ?? '–'}</code>
                </td>
                <td>{entry.source_address}</td>
                <td>
                  <Change before={entry.before} after={entry.after} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
      <ListStatus loading={loading} error={error} empty={entries.length === 0} emptyText="No entries." />
      {nextBefore !== null && !loading ? (
        <button type="button" class="secondary" onClick={() => void load(nextBefore)}>
          Load more
        </button>
      ) : null}
    </div>
  );
}
