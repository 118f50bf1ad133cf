import { useEffect, useState } from 'preact/hooks';
import { KeyEnvironment } from '@gw/vocabulary';
import type { AdminClient, Environment } from './api';
import { EnvironmentSelect, ErrorNote, TableScroll, formatGbp, formatTokens } from './ui';
import { usageApi } from './usage-api';
import type { KeyDayUsage, KeyUsage, KeyUsageLine } from './usage-api';
import './usage-webhooks.css';

/** "ci (gw_live_a1B2)", or the id of a key that no longer exists. */
const keyLabel = (line: KeyUsageLine) => (line.name === null ? line.key_id : `${line.name} (${line.display_prefix})`);

function Refusals({ refusals }: { refusals: Record<string, number> }) {
  const entries = Object.entries(refusals);
  if (entries.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="plain-list">
      {entries.map(([reason, count]) => (
        <li key={reason}>
          {reason}: {formatTokens(count)}
        </li>
      ))}
    </ul>
  );
}

/** Saves text as a file the browser downloads. */
function saveFile(text: string, filename: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  link.click();
  URL.revokeObjectURL(url);
}

function MonthTable({ usage }: { usage: KeyUsage }) {
  const sum = (pick: (line: KeyUsageLine) => number) => usage.data.reduce((total, line) => total + pick(line), 0);
  return (
    <TableScroll label="usage by key this month">
      <table data-testid="key-usage">
        <thead>
          <tr>
            <th>key</th>
            <th>requests</th>
            <th>input</th>
            <th>output</th>
            <th>cache read</th>
            <th>cache write</th>
            <th>billable tokens</th>
            <th>cost (GBP)</th>
            <th>refusals</th>
          </tr>
        </thead>
        <tbody>
          {usage.data.map((line) => (
            <tr key={line.key_id} data-key-id={line.key_id}>
              <td>{keyLabel(line)}</td>
              <td>{formatTokens(line.requests)}</td>
              <td>{formatTokens(line.input_tokens)}</td>
              <td>{formatTokens(line.output_tokens)}</td>
              <td>{formatTokens(line.cache_read_input_tokens)}</td>
              <td>{formatTokens(line.cache_creation_input_tokens)}</td>
              <td data-testid="key-billable">{formatTokens(line.billable_tokens)}</td>
              <td>{formatGbp(line.cost_gbp)}</td>
              <td>
                <Refusals refusals={line.refusals} />
              </td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr>
            <th scope="row">all keys</th>
            <td>{formatTokens(sum((line) => line.requests))}</td>
            <td>{formatTokens(sum((line) => line.input_tokens))}</td>
            <td>{formatTokens(sum((line) => line.output_tokens))}</td>
            <td>{formatTokens(sum((line) => line.cache_read_input_tokens))}</td>
            <td>{formatTokens(sum((line) => line.cache_creation_input_tokens))}</td>
            <td data-testid="keys-billable-total">{formatTokens(sum((line) => line.billable_tokens))}</td>
            <td />
            <td />
          </tr>
        </tfoot>
      </table>
    </TableScroll>
  );
}

function DayTable({ usage }: { usage: KeyDayUsage }) {
  return (
    <TableScroll label="usage by key and day">
      <table data-testid="key-daily-usage">
        <thead>
          <tr>
            <th>day (UTC)</th>
            <th>key</th>
            <th>requests</th>
            <th>billable tokens</th>
            <th>cost (GBP)</th>
            <th>refusals</th>
          </tr>
        </thead>
        <tbody>
          {usage.data.map((line) => (
            <tr key={`${line.day} ${line.key_id}`}>
              <td>{line.day}</td>
              <td>{keyLabel(line)}</td>
              <td>{formatTokens(line.requests)}</td>
              <td>{formatTokens(line.billable_tokens)}</td>
              <td>{formatGbp(line.cost_gbp)}</td>
              <td>
                <Refusals refusals={line.refusals} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

/** The account's usage this month per key, and per key and day, with CSV downloads of both. */
export function KeyUsagePanel(props: { client: AdminClient; accountId: string }) {
  const api = usageApi(props.client);
  const [environment, setEnvironment] = useState<Environment>(KeyEnvironment.live);
  const [month, setMonth] = useState<KeyUsage>();
  const [days, setDays] = useState<KeyDayUsage>();
  const [error, setError] = useState<string>();
  const load = () =>
    Promise.all([api.keyUsage(props.accountId, environment), api.keyDailyUsage(props.accountId, environment)]).then(
      ([byKey, byDay]) => {
        setError(undefined);
        setMonth(byKey);
        setDays(byDay);
      },
      (failure: Error) => setError(failure.message),
    );
  useEffect(() => {
    void load();
  }, [props.client, props.accountId, environment]);
  const download = (daily: boolean) =>
    api.keyUsageCsv(props.accountId, environment, daily).then(
      (file) => saveFile(file.text, file.filename),
      (failure: Error) => setError(failure.message),
    );

  return (
    <div data-testid="usage-by-key">
      <div class="toolbar">
        <label>
          environment
          <EnvironmentSelect value={environment} onChange={setEnvironment} />
        </label>
        <button type="button" class="secondary" onClick={() => void load()}>
          Refresh
        </button>
        <button type="button" class="secondary" onClick={() => void download(false)}>
          Download CSV
        </button>
        <button type="button" class="secondary" onClick={() => void download(true)}>
          Download CSV by day
        </button>
      </div>
      <ErrorNote message={error} />
      {month && days ? (
        <>
          <p class="muted">
            {month.period.start.slice(0, 10)} to {month.period.end.slice(0, 10)} (UTC). Refusals are answers with an
            error to a key that verified; they show within seconds.
          </p>
          <h3>This month by key</h3>
          <MonthTable usage={month} />
          {month.data.length === 0 ? <p class="muted">No use this month.</p> : null}
          <h3>By day</h3>
          <DayTable usage={days} />
        </>
      ) : null}
    </div>
  );
}
