import { useEffect, useState } from 'preact/hooks';
import { AdminApiError } from './api';
import type { Account, AdminClient, Limits, LimitsView } from './api';
import { ErrorNote, FieldError, TableScroll, formatTokens, parseAmount } from './ui';

const numericLimits = [
  ['requests_per_minute', 'requests per minute'],
  ['concurrency', 'concurrency'],
  ['monthly_tokens', 'monthly tokens'],
  ['hard_ceiling_tokens', 'hard ceiling (tokens)'],
] as const;
type NumericLimit = (typeof numericLimits)[number][0];

/**
 * The operator's form for an account's overrides: an empty box is the plan's value. What is typed is read
 * and shown beside its field before saving (50k reads as 50,000); anything unreadable is refused there and
 * nothing is sent, so a typo never clears a limit.
 */
export function LimitsEditor(props: { client: AdminClient; account: Account; onSaved: (account: Account) => void }) {
  const initial = (value: number | null) => (value === null ? '' : String(value));
  const [texts, setTexts] = useState<Record<NumericLimit, string>>(
    Object.fromEntries(numericLimits.map(([name]) => [name, initial(props.account.limits[name])])) as Record<
      NumericLimit,
      string
    >,
  );
  const [overage, setOverage] = useState(String(props.account.limits.overage));
  const [serverError, setServerError] = useState<{ field: string; message: string }>();
  const [error, setError] = useState<string>();
  const [attempted, setAttempted] = useState(false);
  const parsed = Object.fromEntries(numericLimits.map(([name]) => [name, parseAmount(texts[name])])) as Record<
    NumericLimit,
    ReturnType<typeof parseAmount>
  >;
  const invalid = numericLimits.filter(([name]) => 'error' in parsed[name]);
  const submit = (event: Event) => {
    event.preventDefault();
    setAttempted(true);
    setServerError(undefined);
    setError(undefined);
    if (invalid.length > 0) {
      document.querySelector<HTMLInputElement>(`[data-testid=limits-form] input[name=${invalid[0]![0]}]`)?.focus();
      return;
    }
    const limits: Partial<Limits> = { overage: overage === 'null' ? null : overage === 'true' };
    for (const [name] of numericLimits) {
      const amount = parsed[name];
      if ('value' in amount) limits[name] = amount.value;
    }
    props.client.setLimits(props.account.id, limits).then(props.onSaved, (failure: Error) => {
      if (failure instanceof AdminApiError && failure.field !== undefined) {
        setServerError({ field: failure.field, message: failure.message });
      } else setError(failure.message);
    });
  };
  return (
    <form class="inline-form limits-form" onSubmit={submit} data-testid="limits-form" noValidate>
      {numericLimits.map(([name, label]) => {
        const amount = parsed[name];
        const reading =
          'error' in amount ? null : amount.value === null ? "the plan's value" : `= ${formatTokens(amount.value)}`;
        return (
          <label key={name}>
            {label}
            <input
              name={name}
              inputMode="numeric"
              placeholder="plan's value"
              aria-invalid={'error' in amount}
              aria-describedby={`${name}-reading`}
              value={texts[name]}
              onInput={(event) => setTexts({ ...texts, [name]: event.currentTarget.value })}
            />
            {'error' in amount ? (
              <span
                class="field-error"
                data-field-error={name}
                id={`${name}-reading`}
                role={attempted ? 'alert' : undefined}
              >
                {amount.error}
              </span>
            ) : (
              <span class="muted reading" id={`${name}-reading`} data-reading={name}>
                {reading}
              </span>
            )}
            <FieldError error={serverError} field={name} />
          </label>
        );
      })}
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

const show = (value: number | boolean) =>
  typeof value === 'boolean' ? (value ? 'allowed' : 'not allowed') : formatTokens(value);

/** The limits in force for the account: for its admins to read, for the operator to change. */
export function LimitsPanel(props: { client: AdminClient; account: Account; operator: boolean }) {
  const [view, setView] = useState<LimitsView>();
  const [error, setError] = useState<string>();
  const [account, setAccount] = useState(props.account);
  const load = () =>
    props.client.limits(props.account.id).then(
      (loaded) => {
        setError(undefined);
        setView(loaded);
      },
      (failure: Error) => setError(failure.message),
    );
  useEffect(() => {
    void load();
  }, [props.client, props.account.id]);
  const rows = view
    ? ([
        ['requests per minute', view.requests_per_minute],
        ['concurrency (requests at once)', view.concurrency],
        ['monthly tokens', view.monthly_tokens],
        ['overage beyond the allowance', view.overage],
        ['hard ceiling (tokens per month)', view.hard_ceiling_tokens],
      ] as const)
    : [];
  return (
    <div data-testid="limits">
      <ErrorNote message={error} />
      {view ? (
        <>
          <p class="muted">
            plan {view.plan} · residency {view.residency.join(', ')} · models{' '}
            {view.models === 'all' ? 'all' : view.models.join(', ')}
          </p>
          <TableScroll label="limits">
            <table data-testid="limits-table">
              <thead>
                <tr>
                  <th>limit</th>
                  <th>in force</th>
                  <th>plan</th>
                  <th>override</th>
                </tr>
              </thead>
              <tbody>
                {rows.map(([label, limit]) => (
                  <tr key={label}>
                    <td>{label}</td>
                    <td data-testid="limit-value">{show(limit.value)}</td>
                    <td>{show(limit.plan)}</td>
                    <td>{limit.override === null ? <span class="muted">none</span> : show(limit.override)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableScroll>
        </>
      ) : null}
      {props.operator ? (
        <LimitsEditor
          key={JSON.stringify(account.limits)}
          client={props.client}
          account={account}
          onSaved={(saved) => {
            setAccount(saved);
            void load();
          }}
        />
      ) : (
        <p class="muted">Only the gateway's operator can change these limits.</p>
      )}
    </div>
  );
}
